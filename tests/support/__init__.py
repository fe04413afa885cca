"""Helpers the tests share, one module per job; tests import them as `from support.X import ...`.

- `servers`: the fixture servers the tests wrap (paths, commands, config files), `needs_npm`.
- `proxy`: the real proxy as a subprocess (stdio, HTTP, raw JSON-RPC) and reading its answers.
- `processes`: a parent's children; a command run without root's privileges.
- `ledgers`: bodies, offloaded results and the real shaper around a ledger.
- `decision_records`: decision records as the shaper writes them, to seed a ledger.
- `pg`: a throwaway PostgreSQL server, and freezing or locking it.
- `cluster`: replicas of the proxy behind nginx, the deployment example's config and tokens.
- `principals`: two bearer tokens of one proxy and a call made as one of them.
- `metrics`, `load`: the proxy's /metrics scraped; a victim's latency probe under load.
- `relay`: the relay fixture server behind the proxy.
- `rows`: seeded records keyed the way real APIs key them.
- `git_repos`: git repositories with long histories, by `git fast-import`.
- `claude_code`, `fake_messages_api`: headless Claude Code against a fake Messages API.
- `browser`: headless Chromium over DevTools, for the dashboard.
- `file_order`: the slowest test files first, the order conftest hands xdist's workers.
- `zygote`, `zygote_launch`: the tests' Python servers forked from one that has imported the SDK already.

Fixtures stay in tests/conftest.py (pytest's plugin file, never imported by a test).
"""
