#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
module: index_upload
short_description: Publish a wheel to a Python package index once, and say how to install exactly it
version_added: 0.3.0
description:
  - Uploads a wheel file on the host to a package index with the upload API that twine uses (a
    C(multipart/form-data) POST with C(:action=file_upload)), which pypiserver and devpi-server accept.
  - Idempotent. The index's simple page for the project is read first. A file of the same name with the same
    sha256 means nothing to do. A file of the same name with another sha256 is refused, because hosts that install
    by hash would refuse it. A redirect is not followed; it means the index does not have the project (pypiserver
    redirects those to its fallback, PyPI, whose page for the same name lists other files).
  - After an upload, the simple page is read again, and the module fails unless the file is listed there with its
    hash.
  - Returns the pip requirement that installs exactly this wheel (C(name==version --hash=sha256:...)), for
    C(pip install --require-hashes).
  - Without O(path), it only checks that the index can be used, and changes nothing there (a build's first step,
    before hours of compiling). The simple API must answer 200. An upload request without a file must be refused
    as incomplete (HTTP 400). That answer means that the URL takes uploads and that the credentials were accepted.
    HTTP 401 or 403 means the credentials were not accepted, and 404 or 405 means the URL takes no uploads.
  - Only the Python standard library and Ansible's C(open_url) are used.
options:
  path:
    description:
      - The wheel on the host (C(name-version[-build]-python-abi-platform.whl)).
      - Left out, the index is only checked (see the description).
    type: path
  url:
    description: The index's upload URL (pypiserver's root; a devpi index's URL).
    type: str
    required: true
  simple_url:
    description: The index's simple API, ending in C(/) (pypiserver C(.../simple/), devpi C(.../+simple/)).
    type: str
    required: true
  username:
    description: The index's user (basic authentication), for the upload and the reads.
    type: str
  password:
    description: Its password.
    type: str
  validate_certs:
    description: Verify the index's TLS certificate.
    type: bool
    default: true
  timeout:
    description: Seconds one request may take.
    type: int
    default: 600
author:
  - glm53.serving contributors (@glm53)
attributes:
  check_mode:
    description: Reads the index and says whether it would upload; uploads nothing.
    support: full
  diff_mode:
    description: Does not return a diff.
    support: none
  platform:
    description: Any POSIX host with Python; only the standard library is used.
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Publish the fork's wheel from the builder
  glm53.serving.index_upload:
    path: /var/cache/glm53/wheelhouse/KEY/vllm-0.28.1rc1.dev6+g13bd949fc-cp310-cp310-linux_x86_64.whl
    url: http://pypi.internal:8080/
    simple_url: http://pypi.internal:8080/simple/
    username: "{{ vllm_fork_index_username }}"
    password: "{{ vllm_fork_index_password }}"
  register: published
  no_log: true
"""

RETURN = r"""
filename:
  description: The wheel's file name.
  returned: when O(path) is given
  type: str
name:
  description: The distribution name, as the file name spells it.
  returned: when O(path) is given
  type: str
  sample: vllm
project:
  description: The normalized project name (PEP 503), the simple page's folder.
  returned: when O(path) is given
  type: str
version:
  description: The version, from the file name.
  returned: when O(path) is given
  type: str
  sample: 0.28.1rc1.dev6+g13bd949fc
sha256:
  description: The wheel's sha256.
  returned: when O(path) is given
  type: str
requirement:
  description: The pip requirement that installs exactly this wheel.
  returned: when O(path) is given
  type: str
  sample: vllm==0.28.1rc1.dev6+g13bd949fc --hash=sha256:...
uploaded:
  description: Whether it was uploaded by this run (or would be, in check mode).
  returned: when O(path) is given
  type: bool
upload_status:
  description: The HTTP status of the upload request without a file, when O(path) is left out (400 when usable).
  returned: when O(path) is left out and the request was answered
  type: int
reason:
  description:
    - When the index cannot be used, what to fix. C(credentials) (the user or the password), C(simple_url) (the simple
      API did not answer 200) or C(url) (the upload URL takes no uploads, or did not answer).
  returned: when O(path) is left out and the check failed
  type: str
"""

import hashlib
import os
import re
import uuid
from html.parser import HTMLParser
from urllib.error import HTTPError
from urllib.parse import unquote, urlsplit

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(?:-\d[^-]*)?-(?P<python>[^-]+)-[^-]+-[^-]+\.whl$")


def parse_wheel_name(filename):
    """(name, project, version, python tag) of a wheel's file name, or None."""
    m = WHEEL.match(filename)
    if not m:
        return None
    return (m.group("name"), re.sub(r"[-_.]+", "-", m.group("name")).lower(), m.group("version"),
            m.group("python"))


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.hrefs.extend(v for k, v in attrs if k == "href" and v)


def listed_hashes(page, filename):
    """The sha256 fragments of the simple page's links to filename (an empty list: not listed; None: listed
    without a hash)."""
    parser = _Links()
    parser.feed(page)
    found = []
    for href in parser.hrefs:
        path, _sep, fragment = href.partition("#")
        if unquote(urlsplit(path).path.rsplit("/", 1)[-1]) != filename:
            continue
        m = re.search(r"sha256=([0-9a-fA-F]{64})", fragment)
        found.append(m.group(1).lower() if m else None)
    return found


def multipart(fields, filename, content):
    """A multipart/form-data body (the legacy upload API's), binary-safe: (content type, body). No file part when
    filename is None.

    Not ansible.module_utils.urls.prepare_multipart: on ansible-core 2.18 it always base64-encodes a file part
    (a Content-Transfer-Encoding, which RFC 7578 deprecates and an index need not decode, keeping the base64 text
    as the wheel); only 2.19 and later can send it as raw bytes. Not twine: the module runs on the host with the
    standard library alone."""
    boundary = uuid.uuid4().hex
    out = []
    for key, value in fields:
        out.append(("--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n" % (
            boundary, key, value)).encode("utf-8"))
    if filename is not None:
        out.append(("--%s\r\nContent-Disposition: form-data; name=\"content\"; filename=\"%s\"\r\n"
                    "Content-Type: application/octet-stream\r\n\r\n" % (boundary, filename)).encode("utf-8"))
        out.append(content)
        out.append(b"\r\n")
    out.append(("--%s--\r\n" % boundary).encode("utf-8"))
    return "multipart/form-data; boundary=%s" % boundary, b"".join(out)


def upload_fields(name, version, python_tag, sha256):
    """The legacy upload API's form fields for one wheel."""
    return [(":action", "file_upload"), ("protocol_version", "1"), ("name", name), ("version", version),
            ("filetype", "bdist_wheel"), ("pyversion", python_tag), ("metadata_version", "2.1"),
            ("sha256_digest", sha256)]


def check_index(module, auth):
    """Whether the index can be used, changing nothing there: its simple API answers, and an upload request without
    a file is refused as incomplete (400: the URL takes uploads and the credentials were accepted). Fails the module
    with what is wrong; returns the module's result."""
    p = module.params
    try:
        open_url(p["simple_url"], validate_certs=p["validate_certs"], timeout=p["timeout"], follow_redirects="none",
                 **auth).read()
    except HTTPError as exc:
        module.fail_json(msg="reading %s: HTTP %s %s (hosts install from there)"
                             % (p["simple_url"], exc.code, exc.reason), reason="credentials"
                         if exc.code in (401, 403) else "simple_url")
    except Exception as exc:  # pylint: disable=broad-except  # URLError, timeouts, TLS: say which URL
        module.fail_json(msg="reading %s: %s (hosts install from there)" % (p["simple_url"], exc),
                         reason="simple_url")
    ctype, body = multipart([(":action", "file_upload"), ("protocol_version", "1")], None, b"")
    status = 200
    try:
        open_url(p["url"], data=body, method="POST", headers={"Content-Type": ctype}, follow_redirects="none",
                 validate_certs=p["validate_certs"], timeout=p["timeout"], **auth).read()
    except HTTPError as exc:
        status = exc.code
    except Exception as exc:  # pylint: disable=broad-except
        module.fail_json(msg="an upload request to %s: %s" % (p["url"], exc), reason="url")
    if status in (401, 403):
        module.fail_json(msg="the index at %s refused the credentials for uploads (HTTP %s)%s" % (
            p["url"], status, "" if p["username"] else ": no user was given"), reason="credentials",
            upload_status=status)
    if status != 400:
        module.fail_json(msg="%s does not take uploads: an upload request without a file got HTTP %s, where an "
                             "index that takes them refuses it as incomplete (400). Give the index's upload URL "
                             "(pypiserver's root, a devpi index's URL)." % (p["url"], status), reason="url",
                         upload_status=status)
    return dict(changed=False, upload_status=status)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path"),
            url=dict(type="str", required=True),
            simple_url=dict(type="str", required=True),
            username=dict(type="str"),
            password=dict(type="str", no_log=True),
            validate_certs=dict(type="bool", default=True),
            timeout=dict(type="int", default=600),
        ),
        supports_check_mode=True,
    )
    p = module.params
    for option in ("url", "simple_url"):
        if urlsplit(p[option]).scheme not in ("http", "https"):
            module.fail_json(msg="%s=%r is not an http or https URL" % (option, p[option]))
    # basic authentication, sent with the first request (open_url's own options)
    auth = dict(url_username=p["username"], url_password=p["password"] or "", force_basic_auth=True) \
        if p["username"] else {}
    if not p["path"]:
        module.exit_json(**check_index(module, auth))
    filename = os.path.basename(p["path"])
    parsed = parse_wheel_name(filename)
    if parsed is None:
        module.fail_json(msg="%s is not a wheel's file name (name-version[-build]-python-abi-platform.whl)" % filename)
    name, project, version, python_tag = parsed
    try:
        with open(p["path"], "rb") as f:
            content = f.read()
    except OSError as exc:
        module.fail_json(msg="cannot read %s: %s" % (p["path"], exc))
    sha256 = hashlib.sha256(content).hexdigest()
    page_url = p["simple_url"].rstrip("/") + "/" + project + "/"
    result = dict(changed=False, filename=filename, name=name, project=project, version=version, sha256=sha256,
                  requirement="%s==%s --hash=sha256:%s" % (name, version, sha256), uploaded=False)

    def listed():
        # No redirect is followed: pypiserver sends a project it does not have to its fallback (PyPI), whose page
        # for the same name is another project's (PyPI's flashinfer_python-0.6.18-py3-none-any.whl is not this build).
        try:
            resp = open_url(page_url, validate_certs=p["validate_certs"], timeout=p["timeout"],
                            follow_redirects="none", **auth)
            return listed_hashes(resp.read().decode("utf-8", "replace"), filename)
        except HTTPError as exc:
            if exc.code == 404 or 300 <= exc.code < 400:
                return []
            module.fail_json(msg="reading %s: HTTP %s %s" % (page_url, exc.code, exc.reason), **result)
        except Exception as exc:  # pylint: disable=broad-except  # URLError, timeouts, TLS: say which URL
            module.fail_json(msg="reading %s: %s" % (page_url, exc), **result)

    hashes = listed()
    if sha256 in hashes:
        module.exit_json(**result)
    if hashes:
        module.fail_json(msg="%s already lists %s with another sha256 (%s) than this wheel's (%s): hosts install by "
                             "hash and would refuse it. Remove that file from the index, or use another index."
                             % (page_url, filename, ", ".join(h or "none" for h in hashes), sha256), **result)
    result.update(changed=True, uploaded=True)
    if module.check_mode:
        module.exit_json(**result)
    ctype, body = multipart(upload_fields(name, version, python_tag, sha256), filename, content)
    try:
        open_url(p["url"], data=body, method="POST", headers={"Content-Type": ctype},
                 validate_certs=p["validate_certs"], timeout=p["timeout"], **auth)
    except HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")[:500]
        module.fail_json(msg="uploading %s to %s: HTTP %s %s %s" % (filename, p["url"], exc.code, exc.reason, detail),
                         **result)
    except Exception as exc:  # pylint: disable=broad-except
        module.fail_json(msg="uploading %s to %s: %s" % (filename, p["url"], exc), **result)
    if sha256 not in listed():
        module.fail_json(msg="%s was uploaded to %s, but %s does not list it with its sha256 %s" % (
            filename, p["url"], page_url, sha256), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
