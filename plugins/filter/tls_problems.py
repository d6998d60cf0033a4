# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: tls_problems
short_description: Check a TLS certificate, its key and CA on the controller before they are deployed
version_added: "0.3.0"
description:
  - vLLM reads its certificate and key only when it starts, after the builds and the model load; a file that is
    not PEM, a key of another certificate, an expired certificate or one for another name is found then. This
    filter reads them on the controller (with C(cryptography), a dependency of ansible-core) and returns one
    message per problem, naming the variable. An empty list means the files will do.
  - "Checks: the certificate and key are PEM and parse; the key is the certificate's (same public key); the
    certificate's RSA key has at least 2048 bits and its extended key usage, when it has one, allows serverAuth; the
    certificate is valid now and for at least O(min_days) more days; the name the probes connect to is in its
    subjectAltName (a DNS name, or an IP address); the CA file, when given, parses and signed the certificate."
positional: _input
options:
  _input:
    description: The certificate file on the controller (C(serve_ssl_certfile_src)).
    type: str
    required: true
  key:
    description: The key file on the controller (C(serve_ssl_keyfile_src)).
    type: str
    required: true
  ca:
    description: The CA file (C(serve_ssl_ca_certs_src)); empty for none.
    type: str
    default: ""
  names:
    description: The names or addresses the certificate must hold (the host the probes connect to).
    type: list
    elements: str
    default: []
  min_days:
    description: How many more days the certificate must stay valid.
    type: int
    default: 1
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: Refuse a certificate vLLM could not serve
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join(' ') }}"
  vars:
    __problems: "{{ serve_ssl_certfile_src | glm53.serving.tls_problems(serve_ssl_keyfile_src, names=['127.0.0.1']) }}"
"""

RETURN = r"""
_value:
  description: One message per problem.
  type: list
  elements: str
"""

import datetime
import ipaddress

from ansible.errors import AnsibleFilterError

try:
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, ExtensionOID
except ImportError:  # pragma: no cover - ansible-core needs cryptography
    x509 = None


def _why(exc):
    text = str(exc).split(". See ", maxsplit=1)[0].splitlines()
    return text[0] if text else type(exc).__name__


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _public(key):
    return key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _san(cert):
    try:
        ext = cert.extensions.get_extension_for_oid(ExtensionOID.SUBJECT_ALTERNATIVE_NAME).value
    except x509.ExtensionNotFound:
        return [], []
    return ext.get_values_for_type(x509.DNSName), [str(a) for a in ext.get_values_for_type(x509.IPAddress)]


def _covers(name, dns, ips):
    try:
        return str(ipaddress.ip_address(name)) in ips
    except ValueError:
        pass
    name = name.lower().rstrip(".")
    for pattern in (d.lower().rstrip(".") for d in dns):
        if pattern == name or (pattern.startswith("*.") and name.count(".") == pattern.count(".")
                               and name.endswith(pattern[1:])):
            return True
    return False


def tls_problems(cert_path, key_path, ca="", names=None, min_days=1):
    if x509 is None:  # pragma: no cover
        raise AnsibleFilterError("tls_problems needs the cryptography package (ansible-core's dependency)")
    out = []
    try:
        certs = x509.load_pem_x509_certificates(_read(cert_path))
        cert = certs[0]
    except (OSError, ValueError) as exc:
        return ["serve_ssl_certfile_src=%s is not a PEM certificate (%s): vLLM would fail to start with it." % (
            cert_path, _why(exc))]
    try:
        key = serialization.load_pem_private_key(_read(key_path), password=None)
    except TypeError:
        out.append("serve_ssl_keyfile_src=%s is encrypted: vLLM cannot ask for its passphrase; give the key "
                   "unencrypted (it is deployed 0600, the service user's)." % key_path)
        key = None
    except (OSError, ValueError) as exc:
        out.append("serve_ssl_keyfile_src=%s is not a PEM private key (%s)." % (
            key_path, _why(exc)))
        key = None
    if key is not None and _public(key) != cert.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo):
        out.append("serve_ssl_keyfile_src=%s is not the key of serve_ssl_certfile_src=%s (their public keys differ): "
                   "give the key the certificate was issued for." % (key_path, cert_path))
    public = cert.public_key()
    if isinstance(public, rsa.RSAPublicKey) and public.key_size < 2048:
        out.append("serve_ssl_certfile_src=%s has a %d-bit RSA key: OpenSSL's default security level refuses RSA keys "
                   "below 2048 bits, so vLLM could not load it and clients would refuse it. Issue it with a 2048-bit "
                   "(or larger) RSA key, or an EC key." % (cert_path, public.key_size))
    try:
        usages = cert.extensions.get_extension_for_oid(ExtensionOID.EXTENDED_KEY_USAGE).value
    except x509.ExtensionNotFound:
        usages = None
    if usages is not None and ExtendedKeyUsageOID.SERVER_AUTH not in usages \
            and ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE not in usages:
        out.append("serve_ssl_certfile_src=%s may not serve TLS: its extended key usage (%s) has no serverAuth, and "
                   "clients and the probes refuse such a server. Issue it with serverAuth." % (
                       cert_path, ", ".join(u._name for u in usages) or "empty"))
    now = datetime.datetime.now(datetime.timezone.utc)
    not_before, not_after = cert.not_valid_before_utc, cert.not_valid_after_utc
    if not_after <= now + datetime.timedelta(days=int(min_days)):
        out.append("serve_ssl_certfile_src=%s %s on %s: renew it." % (
            cert_path, "expired" if not_after <= now else "expires within %d day(s)" % int(min_days),
            not_after.strftime("%Y-%m-%d")))
    if not_before > now:
        out.append("serve_ssl_certfile_src=%s is not valid before %s." % (cert_path, not_before.strftime("%Y-%m-%d %H:%M")))
    dns, ips = _san(cert)
    for name in names or []:
        if name and not _covers(str(name), dns, ips):
            out.append("serve_ssl_certfile_src=%s does not name %s (subjectAltName: %s): the probes connect to %s and "
                       "would fail the TLS handshake. Issue the certificate for it, or point serve_url at a "
                       "name it holds." % (cert_path, name, ", ".join(dns + ips) or "none", name))
    if ca:
        try:
            authority = x509.load_pem_x509_certificates(_read(ca))
        except (OSError, ValueError) as exc:
            out.append("serve_ssl_ca_certs_src=%s is not a PEM certificate (%s)." % (ca, _why(exc)))
        else:
            chain = certs[1:] + authority
            if not any(_signed_by(cert, issuer) for issuer in chain):
                out.append("serve_ssl_ca_certs_src=%s did not sign serve_ssl_certfile_src=%s (issuer %s): the probes "
                           "would refuse the server." % (ca, cert_path, cert.issuer.rfc4514_string()))
    return out


def _signed_by(cert, issuer):
    try:
        cert.verify_directly_issued_by(issuer)
        return True
    except (InvalidSignature, ValueError, TypeError):  # not this issuer (another name, key type or signature)
        return False


class FilterModule(object):
    def filters(self):
        return {"tls_problems": tls_problems}
