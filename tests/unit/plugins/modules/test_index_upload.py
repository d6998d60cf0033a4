"""glm53.serving.index_upload's parts: a wheel's name read from its file name, a simple page's links to it with their
sha256, and a multipart body that carries the wheel's bytes unchanged (CR, LF and NUL bytes included), as Python's
own multipart parser reads it back. The module against a real pypiserver is molecule build_once's index story."""
from __future__ import annotations

import email.parser
import email.policy

import pytest

from ansible_collections.glm53.serving.plugins.modules import index_upload

SHA = "ab" * 32


@pytest.mark.parametrize("filename, want", [
    ("vllm-0.28.1rc1.dev6+g13bd949fc-cp310-cp310-linux_x86_64.whl",
     ("vllm", "vllm", "0.28.1rc1.dev6+g13bd949fc", "cp310")),
    ("flashinfer_python-0.6.18-py3-none-any.whl", ("flashinfer_python", "flashinfer-python", "0.6.18", "py3")),
    ("Some.Pkg_name-1.0-1build-py3-none-any.whl", ("Some.Pkg_name", "some-pkg-name", "1.0", "py3")),
    ("vllm-0.28.1.tar.gz", None),
    ("vllm-0.28.1-py3-none.whl", None),
])
def test_the_wheel_file_name(filename, want):
    assert index_upload.parse_wheel_name(filename) == want


def test_the_simple_page_links_with_their_hashes():
    name = "vllm-0.28.1rc1.dev6+g13bd949fc-cp310-cp310-linux_x86_64.whl"
    page = ('<html><body><a href="../../packages/vllm-0.28.1rc1.dev6%2Bg13bd949fc-cp310-cp310-linux_x86_64.whl'
            '#sha256=' + SHA + '">' + name + '</a>\n<a href="/packages/vllm-0.28.0-cp310-cp310-linux_x86_64.whl'
            '#sha256=' + "cd" * 32 + '">other</a><a href="https://x/y/' + name + '">no hash</a></body></html>')
    assert index_upload.listed_hashes(page, name) == [SHA, None]
    assert index_upload.listed_hashes(page, "vllm-9-py3-none-any.whl") == []


def test_the_multipart_body_keeps_the_bytes():
    content = bytes(range(256)) * 4 + b"\r\n--\r\n\n\r\x00"
    ctype, body = index_upload.multipart([(":action", "file_upload"), ("sha256_digest", SHA)], "a-1-py3-none-any.whl",
                                         content)
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + body)
    parts = {p.get_param("name", header="content-disposition"): p for p in msg.iter_parts()}
    assert parts[":action"].get_content() == "file_upload" and parts["sha256_digest"].get_content() == SHA
    assert parts["content"].get_filename() == "a-1-py3-none-any.whl"
    assert parts["content"].get_payload(decode=True) == content
