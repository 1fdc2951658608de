"""The HTTP/WebSocket API (OpenEnv-compatible)."""
