"""`python -m m3ui.users`, the accounts' shell command, kept under its documented name; the code is
`m3ui.accounts.cli`."""
