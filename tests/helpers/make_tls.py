#!/usr/bin/env python3
# Test helper: a CA, a server certificate it signed (for localhost and 127.0.0.1) and its key, and a second,
# unrelated CA (the "wrong CA" a probe must refuse), made at test time with the cryptography package
# (ansible-core's own dependency).
"""make_tls.py DIR -> DIR/ca.crt, DIR/server.crt, DIR/server.key, DIR/wrong-ca.crt (PEM), and the bad variants a
careless user deploys: DIR/other.key (a key of no certificate here), DIR/expired.crt (the server key's, expired
yesterday), DIR/other-name.crt (the server key's, for other.example only), DIR/weak.crt and DIR/weak.key (a
1024-bit RSA key), DIR/client-only.crt (the server key's, extended key usage clientAuth only)."""
from __future__ import annotations

import datetime
import ipaddress
import os
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _ca(cn, now):
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(_name(cn))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return key, cert


def _server(ca_key, ca, key, names, not_before, not_after, usage=ExtendedKeyUsageOID.SERVER_AUTH):
    sans = [x509.DNSName(n) if not n[0].isdigit() else x509.IPAddress(ipaddress.ip_address(n)) for n in names]
    return (x509.CertificateBuilder().subject_name(_name(names[0])).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(not_before).not_valid_after(not_after)
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))


def make(directory):
    os.makedirs(directory, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, ca = _ca("glm53 test CA", now)
    _wrong_key, wrong = _ca("glm53 unrelated CA", now)
    key = ec.generate_private_key(ec.SECP256R1())
    other = ec.generate_private_key(ec.SECP256R1())
    soon, later = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=2)
    cert = _server(ca_key, ca, key, ["localhost", "127.0.0.1"], soon, later)
    expired = _server(ca_key, ca, key, ["localhost", "127.0.0.1"], now - datetime.timedelta(days=30),
                      now - datetime.timedelta(days=1))
    other_name = _server(ca_key, ca, key, ["other.example"], soon, later)
    weak_key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    weak = _server(ca_key, ca, weak_key, ["localhost", "127.0.0.1"], soon, later)
    client_only = _server(ca_key, ca, key, ["localhost", "127.0.0.1"], soon, later, ExtendedKeyUsageOID.CLIENT_AUTH)
    pem = serialization.Encoding.PEM

    def private(k):
        return k.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())

    files = {"ca.crt": ca.public_bytes(pem), "wrong-ca.crt": wrong.public_bytes(pem),
             "server.crt": cert.public_bytes(pem), "server.key": private(key), "other.key": private(other),
             "expired.crt": expired.public_bytes(pem), "other-name.crt": other_name.public_bytes(pem),
             "weak.crt": weak.public_bytes(pem), "weak.key": private(weak_key),
             "client-only.crt": client_only.public_bytes(pem)}
    for name, data in files.items():
        path = os.path.join(directory, name)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
            f.write(data)
    return {name: os.path.join(directory, name) for name in files}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for path in make(sys.argv[1]).values():
        print(path)
