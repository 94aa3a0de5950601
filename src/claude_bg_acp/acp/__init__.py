"""The protocol side: JSON-RPC 2.0 messages and the ACP shapes we accept and send (v1 and v2)."""
