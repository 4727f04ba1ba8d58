"""Downloads through huggingface_hub against a local fake Hub (127.0.0.1; never the network)."""

from __future__ import annotations

import hashlib
import tomllib

import pytest

from pull_fake_hub import COMMIT, FakeHub
from pull_support import DRAFT_FILE, DRAFT_REPO, PAIR, TARGET_FILE, TARGET_REPO


@pytest.fixture
def fake_hub(sandbox):
    hub = FakeHub().start()
    sandbox.env["HF_HUB_OFFLINE"] = "0"
    sandbox.env["HF_ENDPOINT"] = hub.endpoint
    yield hub
    hub.stop()


def test_pull_downloads_both_files_into_the_standard_cache(sandbox, tiny_ggufs, fake_hub):
    data = tiny_ggufs.good.read_bytes()
    fake_hub.add(TARGET_REPO, TARGET_FILE, data)
    fake_hub.add(DRAFT_REPO, DRAFT_FILE, data)
    r = sandbox.specterm("pull", PAIR, "--yes")
    assert r.returncode == 0, r.stderr
    assert f"downloading {TARGET_FILE} from {TARGET_REPO}" in r.stdout
    target = (sandbox.cache.hub / f"models--{TARGET_REPO.replace('/', '--')}" / "snapshots" / COMMIT
              / TARGET_FILE)
    assert target.is_file() and target.read_bytes() == data
    assert tomllib.loads(sandbox.user_config.read_text())["model"]["target"] == str(target)
    assert fake_hub.gets(TARGET_FILE) == [None]

    # a second pull finds both files in the cache and downloads nothing
    fake_hub.requests.clear()
    r = sandbox.specterm("pull", PAIR, "--yes")
    assert r.returncode == 0 and "already uses this pair" in r.stdout
    assert fake_hub.gets(TARGET_FILE) == [] and fake_hub.gets(DRAFT_FILE) == []


def test_an_interrupted_download_resumes(sandbox, tiny_ggufs, fake_hub):
    data = tiny_ggufs.good.read_bytes()
    fake_hub.add(TARGET_REPO, TARGET_FILE, data)
    fake_hub.add(DRAFT_REPO, DRAFT_FILE, data)
    blobs = sandbox.cache.hub / f"models--{TARGET_REPO.replace('/', '--')}" / "blobs"
    blobs.mkdir(parents=True)
    half = len(data) // 2
    (blobs / (hashlib.sha256(data).hexdigest() + ".incomplete")).write_bytes(data[:half])
    r = sandbox.specterm("pull", PAIR, "--yes")
    assert r.returncode == 0, r.stderr
    assert fake_hub.gets(TARGET_FILE) == [f"bytes={half}-"]
    assert (blobs / hashlib.sha256(data).hexdigest()).read_bytes() == data


def test_force_download_fetches_a_corrupt_cached_file_again(sandbox, tiny_ggufs, fake_hub):
    data = tiny_ggufs.good.read_bytes()
    fake_hub.add(TARGET_REPO, TARGET_FILE, data)
    fake_hub.add(DRAFT_REPO, DRAFT_FILE, data)
    # a damaged blob under the right name: what an interrupted copy or a disk error leaves
    sandbox.cache.put(TARGET_REPO, TARGET_FILE, tiny_ggufs.corrupt, revision=COMMIT,
                      etag=hashlib.sha256(data).hexdigest())
    r = sandbox.specterm("pull", PAIR, "--yes")
    assert r.returncode == 2 and "failed verification" in r.stderr
    r = sandbox.specterm("pull", PAIR, "--yes", "--force-download")
    assert r.returncode == 0, r.stderr
    assert len(fake_hub.gets(TARGET_FILE)) == 1


def test_a_file_missing_from_the_repository(sandbox, tiny_ggufs, fake_hub):
    fake_hub.add(TARGET_REPO, "something-else.gguf", b"x")
    r = sandbox.specterm("pull", PAIR)
    assert r.returncode == 2
    assert f"{TARGET_FILE} is not in the repository {TARGET_REPO}" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_gated_repository_explains_how_to_get_access(sandbox, fake_hub):
    fake_hub.add(TARGET_REPO, TARGET_FILE, b"x")
    fake_hub.gated.add(TARGET_REPO)
    r = sandbox.specterm("pull", PAIR)
    assert r.returncode == 2
    assert f"{TARGET_REPO} is gated" in r.stderr and "HF_TOKEN" in r.stderr


def test_an_unreachable_hub_is_one_line_and_exit_2(sandbox, fake_hub):
    sandbox.env["HF_ENDPOINT"] = "http://127.0.0.1:9"  # nothing listens on the discard port
    r = sandbox.specterm("pull", PAIR, timeout=30)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("specterm: Offline: 127.0.0.1:9 cannot be reached")
