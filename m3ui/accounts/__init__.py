"""Accounts of the people who use this m3ui: users with roles, their usage, in one SQLite file in the data dir.

No Gradio here. `AccountStore` is the only way in (plain methods, plain dataclasses out), so another database
(PostgreSQL) could replace `sqlite_db` behind it.
"""

from m3ui.accounts.passwords import hash_password, verify_password
from m3ui.accounts.store import AccountError, AccountStore, User

__all__ = ["AccountError", "AccountStore", "User", "hash_password", "verify_password"]
