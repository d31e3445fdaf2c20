"""The accounts schema, one entry per version (never edit a shipped one: append a new version)."""

from __future__ import annotations

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # 1: users and app-wide settings (sign-up, quotas per role)
        """CREATE TABLE users (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            role TEXT NOT NULL CHECK (role IN ('user', 'admin')),
            enabled INTEGER NOT NULL DEFAULT 1,
            password_hash TEXT NOT NULL,
            daily_token_quota INTEGER,
            created_at REAL NOT NULL,
            last_login_at REAL
        )""",
        "CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ),
    (  # 2: usage per user per day (UTC)
        """CREATE TABLE usage (
            user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            day TEXT NOT NULL,
            prompt_tokens INTEGER NOT NULL DEFAULT 0,
            completion_tokens INTEGER NOT NULL DEFAULT 0,
            requests INTEGER NOT NULL DEFAULT 0,
            engine_seconds REAL NOT NULL DEFAULT 0,
            PRIMARY KEY (user_id, day)
        )""",
    ),
    (  # 3: chats kept on the server, per user, each with a revision counted up by every save
        """CREATE TABLE chats (
            user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            id TEXT NOT NULL,
            revision INTEGER NOT NULL,
            title TEXT NOT NULL,
            record TEXT NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (user_id, id)
        )""",
    ),
    (  # 4: API keys (the gateway's), stored as a SHA-256 of the key; the id is the key's public part
        """CREATE TABLE api_keys (
            id TEXT PRIMARY KEY,
            user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            label TEXT NOT NULL,
            key_hash TEXT NOT NULL,
            created_at REAL NOT NULL,
            last_used_at REAL,
            expires_at REAL,
            revoked_at REAL
        )""",
        "CREATE INDEX api_keys_user ON api_keys (user_id)",
    ),
    (  # 5: login sessions of both apps (m3ui/accounts/sessions.py), the token stored as a SHA-256 only
        """CREATE TABLE sessions (
            token_hash TEXT PRIMARY KEY,
            user TEXT NOT NULL,
            app TEXT NOT NULL CHECK (app IN ('chat', 'admin')),
            created_at REAL NOT NULL,
            password_stamp TEXT NOT NULL
        )""",
        "CREATE INDEX sessions_user ON sessions (user, app)",
    ),
    (  # 6: saved system prompts per user (m3ui/accounts/saved_prompts.py); names are case-insensitive
        """CREATE TABLE saved_prompts (
            user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            name TEXT NOT NULL COLLATE NOCASE,
            text TEXT NOT NULL,
            is_default INTEGER NOT NULL DEFAULT 0,
            updated_at REAL NOT NULL,
            PRIMARY KEY (user_id, name)
        )""",
    ),
)
