"""What several parts of mcpdeck share and none owns: small, dependency-free helpers.

A private package (its underscore: not for programs), whose modules are its interface to the rest of
mcpdeck, so they carry plain names: ``files`` (atomic, private files and their lock), ``paths`` (where
files go), ``masking`` (secrets kept out of what is shown), ``safe_text`` (server text made safe to
print), ``log_tail`` (a log file's end), ``version`` (the package version), ``listed_tool``
(``ListedTool``: one tool as a server listed it, kept small). Nothing here imports another part of
mcpdeck, so any part may import it; this file imports nothing, so importing one helper loads no other.
"""
