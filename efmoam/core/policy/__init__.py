"""The operator's action policy: session events, their actions, latches and recovery."""
