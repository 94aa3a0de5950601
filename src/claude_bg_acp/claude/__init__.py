"""The Claude side: the Agent SDK, its CLI subprocess, and the frames between them."""
