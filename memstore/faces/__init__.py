"""How people and agents reach the core: the CLI, the MCP server, HTTP and the review console.

Empty on purpose: importing one light module of this folder loads none of its siblings.
"""
