"""The hub's own OAuth 2.1 authorization server for `/mcp`, as the MCP authorization
specification (2025-11-25) asks of one: metadata (RFC 8414), the authorization code grant with
PKCE S256, clients known by their Client ID Metadata Document or registered dynamically
(RFC 7591), resource indicators (RFC 8707), rotating refresh tokens and revocation (RFC 7009).

oauthlib speaks the protocol (`server.py`, over our models through `validator.py`); the parts it
lacks are here: `client_documents.py` (the guarded fetch of a client's document), `clients.py`
(finding and registering clients), `resources.py` (which resource a token is for). The owner's
consent and the Connected apps page are the dashboard's (`dashboard/oauth.py`), over
`consent.py` and `grants.py`; `views.py` answers the endpoints clients call directly.
"""
