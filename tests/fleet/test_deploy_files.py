"""The deployment files a team starts from say what the gateway does: the Kubernetes
manifests parse, probe the gateway's real endpoints on the port it listens on, give it
longer to stop than it takes to drain, build the search indexes before it starts where
it reads them, and mount a config that ``greenroom config check`` accepts; the container
image installs extras that exist and runs flags ``greenroom serve`` knows; the local
balancer's config is valid HAProxy."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUBE = DEPLOY / "kubernetes"


def manifests() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(KUBE.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc and "kind" in doc:
                found[doc["kind"]] = doc
    return found


def container() -> dict[str, Any]:
    (gateway,) = manifests()["Deployment"]["spec"]["template"]["spec"]["containers"]
    return gateway


def serve_help() -> str:
    done = subprocess.run(
        [sys.executable, "-m", "greenroom.cli", "serve", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        check=True,
    )
    return done.stdout


def test_kustomization_names_every_manifest_but_the_secret_example() -> None:
    kustomization = yaml.safe_load((KUBE / "kustomization.yaml").read_text(encoding="utf-8"))
    listed = set(kustomization["resources"])
    on_disk = {p.name for p in KUBE.glob("*.yaml")} - {"kustomization.yaml", "secret.example.yaml"}
    assert listed == on_disk


def test_the_probes_ask_the_gateway_endpoints_on_its_port() -> None:
    from greenroom_gateway.ops.http import HEALTH_PATH, READY_PATH

    gateway = container()
    (port,) = gateway["ports"]
    args = gateway["args"]
    assert args[args.index("--port") + 1] == str(port["containerPort"])
    assert gateway["readinessProbe"]["httpGet"] == {"path": READY_PATH, "port": port["name"]}
    assert gateway["livenessProbe"]["httpGet"] == {"path": HEALTH_PATH, "port": port["name"]}
    service = manifests()["Service"]
    assert service["spec"]["ports"][0]["targetPort"] == port["name"]


def test_a_pod_is_given_longer_to_stop_than_the_gateway_takes_to_drain() -> None:
    args = container()["args"]
    drain = float(args[args.index("--drain-timeout") + 1])
    grace = manifests()["Deployment"]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert drain < grace


def test_an_init_container_builds_the_search_indexes_where_the_gateway_reads_them() -> None:
    gateway = container()
    (init,) = manifests()["Deployment"]["spec"]["template"]["spec"]["initContainers"]
    assert init["image"] == gateway["image"] and init["envFrom"] == gateway["envFrom"]  # the config's ${VAR}s
    served = gateway["args"][0]
    assert "greenroom rank index" in " ".join(init["command"]) and init["command"][-1] == served
    mounts = {m["name"]: m["mountPath"] for m in init["volumeMounts"]}
    gateway_mounts = {m["name"]: m["mountPath"] for m in gateway["volumeMounts"]}
    assert Path(served).parent == Path(mounts["config"]) == Path(gateway_mounts["config"])
    # the state folder is the image's GREENROOM_HOME in both: the store the gateway reads
    (home,) = re.findall(r"GREENROOM_HOME=(\S+)", (DEPLOY / "Dockerfile").read_text(encoding="utf-8"))
    assert mounts["state"] == gateway_mounts["state"] == home


def test_the_init_command_indexes_stops_on_a_wrong_config_and_lets_nothing_to_index_pass(tmp_path: Path) -> None:
    (init,) = manifests()["Deployment"]["spec"]["template"]["spec"]["initContainers"]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env["GREENROOM_HOME"] = str(tmp_path / "state")
    tool = '{"name": "get_weather", "description": "Weather in a city"}\n'
    (tmp_path / "tools.jsonl").write_text(tool, encoding="utf-8")
    configs = {
        "indexed": '[tools]\ncatalogs = ["tools.jsonl"]\n',
        "nothing to index": "",  # no tools: the gateway still starts, its search has nothing to build
        "wrong": "[tools]\ncatalog = 1\n",
    }
    codes = {}
    for what, text in configs.items():
        config = tmp_path / f"{what.replace(' ', '-')}.toml"
        config.write_text(text, encoding="utf-8")
        done = subprocess.run([*init["command"][:-1], str(config)], capture_output=True, text=True, env=env)
        codes[what] = done.returncode
    assert codes == {"indexed": 0, "nothing to index": 0, "wrong": 1}, codes
    assert len(list((tmp_path / "state" / "ranking-index").glob("*.npz"))) == 2


def test_every_flag_the_image_and_the_deployment_pass_is_one_serve_knows() -> None:
    known = set(re.findall(r"--[a-z][a-z-]+", serve_help()))
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    (cmd,) = re.findall(r"^CMD (\[.*?\])$", dockerfile, re.M | re.S)
    passed = set(re.findall(r'"(--[a-z-]+)"', cmd)) | {a for a in container()["args"] if a.startswith("--")}
    assert passed and passed <= known, passed - known


def test_the_image_installs_extras_the_package_has_and_no_dev_tools() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    (wanted,) = re.findall(r'\[([a-z,]+)\]"', dockerfile)
    assert set(wanted.split(",")) <= set(extras)
    assert "dev" not in wanted.split(",") and "pytest" not in dockerfile
    for copied in re.findall(r"^COPY (?!--)(\S+)", dockerfile, re.M):
        assert (ROOT / copied).exists(), copied


def test_the_configmap_config_passes_config_check(tmp_path: Path) -> None:
    text = manifests()["ConfigMap"]["data"]["gateway.toml"]
    config = tmp_path / "gateway.toml"
    config.write_text(text, encoding="utf-8")
    env = {
        **os.environ,
        "GREENROOM_HOME": str(tmp_path / "home"),
        "GREENROOM_PRIORS_URL": "postgresql://greenroom:secret@127.0.0.1:9/greenroom",
        "GITHUB_TOKEN": "ghp-example",
    }
    done = subprocess.run(
        [sys.executable, "-m", "greenroom.cli", "config", "check", str(config)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 1: notes/warnings (no cached listings)
    assert "secret" not in done.stdout + done.stderr


def test_the_balancer_config_is_valid_haproxy(tmp_path: Path) -> None:
    haproxy = shutil.which("haproxy")
    if haproxy is None:
        if os.environ.get("GREENROOM_CI") or os.environ.get("CI"):
            pytest.fail("haproxy is not installed: .ci/run installs it")
        pytest.skip("needs haproxy (Debian: apt-get install haproxy)")
    cfg = tmp_path / "haproxy.cfg"
    body = (DEPLOY / "local" / "haproxy.cfg").read_text(encoding="utf-8")
    cfg.write_text(body + "    server r1 127.0.0.1:9001 check\n    server r2 127.0.0.1:9002 check\n")
    done = subprocess.run(
        [haproxy, "-c", "-f", str(cfg)],
        capture_output=True,
        text=True,
        env={**os.environ, "GR_LB_BIND": "127.0.0.1:9000"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
