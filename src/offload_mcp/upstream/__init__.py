"""The upstream face: the MCP server clients talk to (its transports, sessions, dispatch of
tools/call, routing of resources and prompts, HTTP limits and extras).
"""
