"""`milk-lsp acp`: the Agent Client Protocol (ACP v1) front door, on the same engine, store
and sessions as the LSP server.

Nothing here is imported by the LSP server: the ACP SDK (`agent-client-protocol`) loads only
when `milk-lsp acp` runs. `server` holds the agent's handlers, `bridge` the engine's
`ClientBridge` over ACP, `updates` the mapping of `milk/update` payloads onto ACP session
updates, `prompt` the reading of prompt blocks and commands, `errors` the JSON-RPC errors,
`transport` the stdio framing. docs/acp.md describes the protocol as milk serves it.
"""
