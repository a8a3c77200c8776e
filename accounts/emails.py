"""The one spelling of an e-mail address: the form every door stores and looks an address up by.

An address reaches one mailbox however its domain is spelled: Django's mail sends the domain
IDNA-encoded (`sanitize_address`), and IDNA 2003 (Python's `idna` codec, RFC 3490) maps
full-width and other compatibility letters (NFKC) and case to one form, so `alice@ｅxample.com`,
`alice@EXAMPLE.com` and `alice@example.com` are one mailbox, and `xn--exmple-cua.com` is
`exämple.com`. Compared as typed, another account could hold the owner's mailbox under a second
spelling (and be sent the link that confirms it). The local part is lower-cased, as allauth stores
every address (its forms lower-case them); Django's EmailValidator allows only ASCII there.
"""

from __future__ import annotations


def email_clean(email) -> str:
    """`email` trimmed, lower-cased, its domain in its one Unicode form (IDNA to ASCII and back);
    "" for no address. A domain IDNA refuses is kept lower-cased (validation refuses it elsewhere)."""
    if not isinstance(email, str):
        return ""
    email = email.strip().lower()
    local, at, domain = email.rpartition("@")
    if not at or not domain:
        return email
    try:
        domain = domain.encode("idna").decode("idna")
    except UnicodeError:
        pass
    return f"{local}@{domain.lower()}"
