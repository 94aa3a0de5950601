from claude_bg_acp.cli import main

main()
