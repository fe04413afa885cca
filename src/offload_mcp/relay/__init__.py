"""Server-to-client features relayed through the proxy: sampling, elicitation, roots, logging.

`capabilities` decides what the downstream sessions declare; `router` sends each
server-to-client request to the upstream client whose call caused it;
`parked` bridges a 2026-era client (input_required rounds) to a handshake-era
downstream request; `listen` forwards 2026-era resource subscriptions downstream.
"""
