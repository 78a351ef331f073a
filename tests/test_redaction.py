"""The share-link redaction engine (treeview/redaction/): pure, no database."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import orjson
import pytest

from treeview.redaction import (
    Hit,
    Redactor,
    drop_opaque,
    mask_for,
    redaction_record,
    scan_entries,
)

DATA = Path(__file__).parent / "data"
CORPUS = DATA / "redaction"
EXPECTED = json.loads((CORPUS / "secrets.expected.json").read_text(encoding="utf-8"))
TEAM = EXPECTED["team_strings"]
SECRETS: dict[str, str] = EXPECTED["secrets"]
OPAQUE_MARKERS = (
    b"thinkingSignature",
    b"thoughtSignature",
    b"textSignature",
    b"providerPayload",
    b"encrypted_content",
    b"openaiRemoteCompaction",
)


def _entries(path: Path) -> list[dict]:
    entries = []
    for line in path.read_bytes().splitlines():
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            entries.append(obj)
    return entries


def _secret_entries() -> list[dict]:
    return _entries(CORPUS / "secrets.jsonl")


def _by_id(entries: list[dict], entry_id: str) -> dict:
    return next(e for e in entries if e.get("id") == entry_id)


def _text(entry: dict) -> str:
    return entry["message"]["content"][0]["text"]


# -- the secrets corpus ------------------------------------------------------------------------------------


def test_every_secret_in_the_corpus_is_masked():
    redactor = Redactor(TEAM)
    out = b"\n".join(orjson.dumps(redactor.redact(e)) for e in _secret_entries())
    leaked = [name for name, secret in SECRETS.items() if secret.encode() in out]
    assert leaked == []
    assert [t for t in TEAM if t.encode() in out] == []
    assert b"[REDACTED: " in out


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("aws_id", "AWS access key"),
        ("aws_id2", "AWS access key"),
        ("aws_secret", ".env value"),
        ("aws_cred_file_secret", ".env value"),
        ("ghp", "GitHub token"),
        ("github_pat", "GitHub token"),
        ("glpat", "GitLab token"),
        ("xoxb", "Slack token"),
        ("xoxp", "Slack token"),
        ("slack_hook", "Slack webhook"),
        ("stripe_live", "Stripe key"),
        ("stripe_whsec", "Stripe key"),
        ("openai_proj", "OpenAI API key"),
        ("openai_old", "OpenAI API key"),
        ("anthropic", "Anthropic API key"),
        ("google", "Google API key"),
        ("sendgrid", "SendGrid key"),
        ("npm", "npm token"),
        ("jwt", "JWT"),
        ("jwt2", "JWT"),
        ("rsa", "Private key"),
        ("openssh", "Private key"),
        ("ec", "Private key"),
        ("gcp_key", "Private key"),
        ("k8s_key", "Private key"),
        ("azure_key", "Azure storage key"),
        ("azure_sas", "Azure SAS signature"),
        ("pg_pw", "Password in URL"),
        ("mysql_pw", "Password in URL"),
        ("redis_pw", "Password in URL"),
        ("git_pw", "Password in URL"),
        ("basic_b64", "Authorization header"),
        ("bearer_opaque", "Authorization header"),
        ("x_api_key", "API key header"),
        ("curl_pw", "Password in command"),
        ("cli_pw", "Password in command"),
        ("pgpassword", ".env value"),
        ("db_password_env", ".env value"),
        ("jwt_secret_env", ".env value"),
        ("django_secret", "Secret keyword"),
        ("gcp_key_id", "Secret keyword"),
        ("py_password", "Secret keyword"),
        ("conn_pw", "Password in connection string"),
        ("highent", "Secret assignment"),
    ],
)
def test_each_corpus_secret_is_found_by_the_right_detector(name, kind):
    secret = SECRETS[name]
    hits = scan_entries(_secret_entries(), TEAM)
    kinds = {h.kind for h in hits if secret in h.secret}
    assert kind in kinds


def test_a_bare_random_token_in_prose_is_a_high_entropy_hit():
    entry = {"type": "custom", "customType": "n", "data": "the key zQ8vX2mN5pL9kR3tW7yB1cF4hJ6gD0sA leaked"}
    assert [(h.kind, h.secret) for h in Redactor().scan(entry)] == [
        ("High-entropy string", "zQ8vX2mN5pL9kR3tW7yB1cF4hJ6gD0sA")
    ]


def test_team_strings_are_masked_exactly_and_case_sensitively():
    redactor = Redactor(["Project Nightjar", "abc", ""])
    entry = {
        "type": "custom_message",
        "customType": "n",
        "content": "project nightjar vs Project Nightjar; abc",
    }
    hits = redactor.scan(entry)
    assert [(h.kind, h.secret) for h in hits] == [("Team secret", "Project Nightjar")]  # "abc": too short
    assert redactor.redact(entry)["content"] == "project nightjar vs [REDACTED: Team secret]; abc"


def test_harmless_env_lines_stay_readable():
    entries = _secret_entries()
    text = _text(Redactor(TEAM).redact(_by_id(entries, "a0000003")))
    for line in (
        "DEBUG=false",
        "PORT=8000",
        "TOKEN_EXPIRY_SECONDS=3600",
        "AUTH_URL=https://auth.acme.test/oauth/authorize",
        "ALLOWED_HOSTS=app.acme.test,api.acme.test",
    ):
        assert line in text.splitlines()
    assert "DB_PASSWORD=[REDACTED: .env value]" in text
    assert "postgres://app_user:[REDACTED: Password in URL]@db.[REDACTED: Team secret]:5432/app" in text
    assert 'JWT_SECRET="[REDACTED: .env value]"' in text  # the quotes stay, the value goes


def test_a_private_key_spanning_many_lines_is_one_hit():
    entries = _secret_entries()
    hits = Redactor().scan(_by_id(entries, "a0000008"))
    assert [h.kind for h in hits] == ["Private key"] * 3
    assert hits[0].secret == SECRETS["openssh"]
    assert hits[1].secret == SECRETS["rsa"]
    redacted = _text(Redactor().redact(_by_id(entries, "a0000008")))
    assert redacted.startswith("$ cat ~/.ssh/id_ed25519\n[REDACTED: Private key]\n$ cat deploy/id_rsa\n")


def test_a_truncated_private_key_is_masked_to_the_end_of_its_material():
    key = (
        "-----BEGIN RSA PRIVATE KEY-----\n"
        + "MIIEowIBAAKCAQEAq8vR2mN5pL9zT3wX7yB1cF4hJ6gD0sAe5Uo8Ii2Kq8vR2mN5\n" * 5
    )
    entry = {"type": "custom", "customType": "log", "data": {"out": key + "[output truncated]"}}
    assert Redactor().redact(entry)["data"]["out"] == "[REDACTED: Private key][output truncated]"


def test_a_key_mentioned_in_prose_is_no_hit():
    entry = {
        "type": "custom",
        "customType": "n",
        "data": "PEM files start with -----BEGIN RSA PRIVATE KEY-----.",
    }
    assert Redactor().scan(entry) == []


# -- ordinary work -----------------------------------------------------------------------------------------


def test_ordinary_code_is_not_masked():
    hits = scan_entries(_entries(CORPUS / "ordinary.jsonl"))
    assert [(h.kind, h.secret) for h in hits] == []


@pytest.mark.parametrize("path", sorted((DATA / "real").glob("*.jsonl")), ids=lambda p: p.name)
def test_real_sessions_have_no_hits(path):
    # real coding sessions: quoted example keys ("sk-ant-..."), `qpdf --password=mypassword` in docs,
    # `"apiKey": "OLLAMA_API_KEY"`, macOS temp paths: all placeholders, references or paths
    assert [(h.kind, h.secret) for h in scan_entries(_entries(path))] == []


def test_image_data_and_structural_fields_are_not_scanned():
    random_b64 = "Zk9xR2mN5pL9zT3wX7yB1cF4hJ6gD0sAe5Uo8Ii2Kq"
    entry = {
        "type": "message",
        "id": random_b64,
        "parentId": None,
        "timestamp": "2026-05-01T10:00:00.000Z",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "image", "data": random_b64 * 10, "mimeType": "image/png"},
                {
                    "type": "toolCall",
                    "id": "toolu_" + random_b64,
                    "name": "x",
                    "arguments": {"id": random_b64},
                },
            ],
            "responseId": "resp_" + random_b64,
            "model": random_b64,
        },
    }
    hits = Redactor().scan(entry)
    # tool-call arguments are free-form: even their "id" is scanned
    assert [h.path for h in hits] == [("message", "content", 1, "arguments", "id")]


# -- masking, unmasking, ids --------------------------------------------------------------------------------


def test_unmasking_one_hit_leaves_only_it_in_clear():
    entries = _secret_entries()
    entry = _by_id(entries, "a0000003")
    redactor = Redactor(TEAM)
    hits = redactor.scan(entry)
    chosen = next(h for h in hits if h.secret == SECRETS["ghp"])
    out = orjson.dumps(redactor.redact(entry, hits, unmasked={chosen.id}))
    assert SECRETS["ghp"].encode() in out
    assert [h.kind for h in hits if h.secret.encode() in out] == ["GitHub token"]


def test_hit_ids_are_stable_across_scans_and_redactors():
    entries = _secret_entries()
    first = [h.id for h in scan_entries(entries, TEAM)]
    second = [h.id for e in entries for h in Redactor(list(reversed(TEAM))).scan(e)]
    assert first == second
    hit = scan_entries(entries, TEAM)[0]
    expected = hashlib.sha256(f"{hit.entry_id}\0{hit.kind}\0{hit.secret}".encode()).hexdigest()[:16]
    assert hit.id == expected
    assert hit.fingerprint == hashlib.sha256(hit.secret.encode()).hexdigest()


def test_hits_are_in_document_order_and_do_not_overlap():
    for entry in _secret_entries():
        hits = Redactor(TEAM).scan(entry)
        by_path: dict[tuple, list[Hit]] = {}
        for h in hits:
            by_path.setdefault(h.path, []).append(h)
        for path_hits in by_path.values():
            spans = [(h.start, h.end) for h in path_hits]
            assert spans == sorted(spans)
            assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))


def test_mask_names_the_detector_and_never_the_secret():
    for hit in scan_entries(_secret_entries(), TEAM):
        mask = mask_for(hit)
        assert mask == f"[REDACTED: {hit.kind}]"
        assert hit.secret not in mask


def test_context_shows_neighbouring_secrets_masked():
    a, b = "ghp_" + "Zr8Xq2Lm9Kv4Tn7Bc1Wd5Hy3Pj6Fs0Ga2Ue8", "AKIAQ3EGRVXNZ7MPLB4T"
    entry = {"type": "custom", "customType": "n", "data": f"tokens {a} and {b} here"}
    first, second = Redactor().scan(entry)
    assert (first.before, first.secret) == ("tokens ", a)
    assert first.after == " and [REDACTED: AWS access key] here"
    assert second.before.endswith("[REDACTED: GitHub token] and ")
    assert a not in second.before + second.after


def test_redacted_entries_keep_their_identity_and_shape():
    for entry in _secret_entries():
        redacted = Redactor(TEAM).redact(entry)
        for key in ("type", "id", "parentId", "timestamp"):
            assert redacted.get(key) == entry.get(key)
        assert list(redacted) == list(entry)
        if entry.get("type") == "message":
            message, original = redacted["message"], entry["message"]
            assert message["role"] == original["role"]
            assert message.get("toolCallId") == original.get("toolCallId")
            if isinstance(original.get("content"), list):
                assert [b["type"] for b in message["content"]] == [b["type"] for b in original["content"]]


def test_redact_does_not_touch_the_original():
    entry = _by_id(_secret_entries(), "a0000002")
    before = orjson.dumps(entry)
    Redactor(TEAM).redact(entry)
    assert orjson.dumps(entry) == before


def test_stale_spans_still_mask_the_secret():
    redactor = Redactor()
    entry = {"type": "custom", "customType": "n", "data": "token AKIAQ3EGRVXNZ7MPLB4T"}
    hits = redactor.scan(entry)
    moved = {**entry, "data": "the token is AKIAQ3EGRVXNZ7MPLB4T!"}
    assert redactor.redact(moved, hits)["data"] == "the token is [REDACTED: AWS access key]!"


def test_redaction_record_holds_fingerprints_not_secrets():
    hits = scan_entries(_secret_entries(), TEAM)
    unmasked = {hits[0].id}
    record = redaction_record(hits, unmasked)
    assert {r["id"] for r in record} == {h.id for h in hits} - unmasked
    assert set(record[0]) == {"id", "entry_id", "kind", "fingerprint"}
    dumped = orjson.dumps(record)
    assert not any(h.secret.encode() in dumped for h in hits)


# -- opaque payloads ----------------------------------------------------------------------------------------


def test_opaque_payloads_are_dropped_even_when_everything_is_unmasked():
    entries = _secret_entries()
    redactor = Redactor(TEAM)
    everything = {h.id for h in scan_entries(entries, TEAM)}
    out = b"\n".join(orjson.dumps(redactor.redact(e, unmasked=everything)) for e in entries)
    assert not any(marker in out for marker in OPAQUE_MARKERS)
    assert b"EmwKAhgB" not in out  # redactedThinking data
    thinking = _by_id(entries, "a0000004")
    block = redactor.redact(thinking, unmasked=everything)["message"]["content"][0]
    assert block == {"type": "redactedThinking", "data": ""}
    compaction = redactor.redact(_by_id(entries, "a0000012"), unmasked=everything)
    assert compaction["preserveData"] == {}


def test_unmasking_everything_equals_dropping_opaque_payloads():
    entries = _secret_entries()
    redactor = Redactor(TEAM)
    for entry in entries:
        ids = {h.id for h in redactor.scan(entry)}
        assert redactor.redact(entry, unmasked=ids) == drop_opaque(entry)


def test_drop_opaque_keeps_the_rest():
    entry = {
        "type": "message",
        "id": "x1",
        "parentId": None,
        "timestamp": "t",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig", "redacted": True},
                {"type": "text", "text": "hi", "textSignature": "s"},
                {"type": "toolCall", "id": "c", "name": "n", "arguments": {}, "thoughtSignature": "s"},
            ],
            "providerPayload": {"type": "openaiResponsesHistory"},
        },
    }
    assert drop_opaque(entry)["message"] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hmm", "redacted": True},
            {"type": "text", "text": "hi"},
            {"type": "toolCall", "id": "c", "name": "n", "arguments": {}},
        ],
    }


# -- hostile input ------------------------------------------------------------------------------------------


def test_non_string_values_and_odd_entries_do_not_crash():
    redactor = Redactor(TEAM)
    entry = {
        "type": "custom",
        "id": 12,
        1: "int key AKIAQ3EGRVXNZ7MPLB4T",
        "data": [
            None,
            True,
            1.5,
            -3,
            {"k": [b"bytes", ("tuple AKIAQ3EGRVXNZ7MPLB4T",)]},
            "\ud800 lone surrogate",
        ],
    }
    hits = redactor.scan(entry)
    assert [h.path for h in hits] == [(1,), ("data", 4, "k", 1, 0)]
    assert hits[0].entry_id == "12"
    out = redactor.redact(entry)
    assert out[1] == "int key [REDACTED: AWS access key]"
    assert out["data"][4]["k"][1] == ["tuple [REDACTED: AWS access key]"]
    for odd in ([], "text", 5, None, {}):
        assert redactor.scan(odd) == []  # type: ignore[arg-type]
    assert redactor.redact({}) == {}


def test_deep_nesting_is_scanned_without_recursion():
    leaf = {"text": "AKIAQ3EGRVXNZ7MPLB4T"}
    entry: dict = {"type": "custom", "id": "d", "data": leaf}
    node = entry
    for _ in range(5000):
        node["data"] = {"data": node["data"]}
        node = node["data"]
    hits = Redactor().scan(entry)
    assert len(hits) == 1 and len(hits[0].path) == 5002
    out = Redactor().redact(entry, hits)
    for key in hits[0].path[:-1]:
        out = out[key]
    assert out["text"] == "[REDACTED: AWS access key]"


def test_cycles_do_not_hang():
    entry: dict = {"type": "custom", "id": "c", "data": {"s": "AKIAQ3EGRVXNZ7MPLB4T"}}
    entry["data"]["self"] = entry["data"]
    assert [h.path for h in Redactor().scan(entry)] == [("data", "s")]
    out = Redactor().redact(entry)
    assert out["data"]["s"] == "[REDACTED: AWS access key]"
    assert out["data"]["self"] is out["data"]


@pytest.mark.parametrize(
    "text",
    [
        "a" * 3_000_000,
        "Ab1+/" * 400_000,
        "password=" * 100_000,
        "-----BEGIN RSA PRIVATE KEY-----" * 30_000,
        "-----BEGIN EC PRIVATE KEY-----\n" + "-----END EC PRIVATE KEY-----" * 30_000,
        "PuTTY-User-Key-File-2:" * 20_000,
        ("x" * 5000 + "\n") * 400,
        "://" * 300_000 + "@",
        "eyJ" * 300_000,
        "sk-" * 300_000 + "T3BlbkFJ" * 1000,
        "Authorization: Bearer " * 40_000,
    ],
    ids=[
        "letters",
        "base64ish",
        "assignments",
        "key-markers",
        "end-markers",
        "putty-markers",
        "long-lines",
        "url-markers",
        "jwt-prefixes",
        "openai-prefixes",
        "headers",
    ],
)
def test_huge_strings_scan_in_bounded_time(text):
    entry = {"type": "custom", "customType": "n", "data": text}
    redacted = Redactor().redact(entry)
    assert isinstance(redacted["data"], str)


def test_a_shared_redactor_gives_the_same_answers_from_many_threads():
    entries = _secret_entries()
    redactor = Redactor(TEAM)
    expected = [h.id for e in entries for h in redactor.scan(e)]
    results: list[list[str]] = []

    def work() -> None:
        results.append([h.id for e in entries for h in redactor.scan(e)])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 4


# -- keys and tool names (issue 11, finding 5) ---------------------------------------------------------------

KEY_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _tool_call(arguments: dict) -> dict:
    return {
        "type": "message",
        "id": "c",
        "parentId": None,
        "message": {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "call1", "name": KEY_TOKEN, "arguments": arguments}],
        },
    }


def test_secrets_used_as_keys_in_tool_arguments_are_masked_keeping_the_structure():
    entry = _tool_call({KEY_TOKEN: "value", "headers": {"corp-host.internal": 1, "x": 2}, "after": KEY_TOKEN})
    redactor = Redactor(["corp-host.internal"])
    hits = redactor.scan(entry)
    assert {(h.kind, h.in_key) for h in hits} >= {("GitHub token", True), ("Team secret", True)}
    out = redactor.redact(entry, hits)
    text = json.dumps(out)
    assert KEY_TOKEN not in text and "corp-host.internal" not in text
    arguments = out["message"]["content"][0]["arguments"]
    # same order, same values, only the keys renamed
    assert list(arguments) == ["[REDACTED: GitHub token]", "headers", "after"]
    assert arguments["[REDACTED: GitHub token]"] == "value"
    assert arguments["headers"] == {"[REDACTED: Team secret]": 1, "x": 2}
    assert arguments["after"] == "[REDACTED: GitHub token]"
    # unmasking the hit shows the key again
    key_hit = next(h for h in hits if h.in_key and h.kind == "GitHub token")
    shown = redactor.redact(entry, hits, {key_hit.id})
    assert KEY_TOKEN in shown["message"]["content"][0]["arguments"]


def test_two_masked_keys_of_one_mapping_do_not_collide():
    other = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    entry = _tool_call({KEY_TOKEN: 1, other: 2})
    out = Redactor().redact(entry)
    assert out["message"]["content"][0]["arguments"] == {
        "[REDACTED: GitHub token]": 1,
        "[REDACTED: GitHub token] (2)": 2,
    }


def test_tool_names_of_calls_and_results_are_masked():
    result = {
        "type": "message",
        "id": "r",
        "parentId": "c",
        "message": {"role": "toolResult", "toolCallId": "call1", "toolName": KEY_TOKEN, "content": []},
    }
    for entry in (_tool_call({}), result):
        out = Redactor().redact(entry)
        assert KEY_TOKEN not in json.dumps(out)
        assert out["id"] == entry["id"] and out.get("parentId") == entry.get("parentId")


def test_keys_of_the_session_format_are_never_renamed_by_a_team_string():
    entry = _tool_call({"x": 1})
    entry["message"]["content"][0]["name"] = "bash"
    out = Redactor(["content", "arguments"]).redact(entry)
    assert out == entry
