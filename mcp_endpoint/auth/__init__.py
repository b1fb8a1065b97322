"""Who may call: access tokens, scopes, rate limits and the hub's OAuth 2.1 server."""
