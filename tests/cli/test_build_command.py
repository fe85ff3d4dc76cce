"""`papertrack build`: the Bento's spec is the repository's bentofile.yaml with the champion's requirements, and
the command works from an installed (not editable) package, packing the wheel and the champion's pins."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def test_bento_spec_is_the_bentofile_with_the_champions_requirements(tmp_path):
    import yaml

    from papertrack.serving.http.serve_command import BENTO_SPEC, bento_spec, champion_requirements

    repo = yaml.safe_load((Path(__file__).resolve().parents[2] / "bentofile.yaml").read_text())
    for key in ("service", "name", "labels", "description", "include", "envs"):
        assert BENTO_SPEC[key] == repo[key], key
    spec = bento_spec("dist/papertrack-0.1.0-py3-none-any.whl")
    assert spec["python"] == {
        "lock_packages": False,
        "wheels": ["dist/papertrack-0.1.0-py3-none-any.whl"],
        "requirements_txt": "requirements.txt",
    }
    mlflow_requirements = tmp_path / "requirements.txt"
    mlflow_requirements.write_text(
        "mlflow==3.17.2\ntorch==2.13.0\nsentence-transformers==6.2.0\npapertrack==0.1.0\n# comment\nbentoml==1.4.1\n"
    )
    assert champion_requirements(mlflow_requirements) == [
        "mlflow==3.17.2",
        "torch==2.13.0",
        "sentence-transformers==6.2.0",
    ]


def _fresh_venv_with_the_wheel(tmp_path: Path, wheel: Path) -> Path:
    """A venv under tmp_path with papertrack installed from ``wheel`` (not editable); its other packages come
    from the environment running the tests (a .pth line), so nothing is downloaded."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    packages = next((venv / "lib").glob("python3*/site-packages"))
    others = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]  # .pth lines: no .pth runs
    (packages / "00-deps.pth").write_text("\n".join(others) + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(packages), str(wheel)], check=True
    )
    return venv / "bin" / "python"


@pytest.mark.slow
def test_build_works_from_an_installed_package_and_packs_the_champions_requirements(trained, tmp_path):
    import tarfile
    import zipfile

    from papertrack.serving.http.serve_command import build_wheel

    repo = Path(__file__).resolve().parents[2]
    before = set(p.name for p in repo.iterdir())
    wheel = build_wheel(tmp_path / "wheel")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "papertrack/serving/http/page/static/page.js" in names and "papertrack/features/labels.py" in names
    python = _fresh_venv_with_the_wheel(tmp_path, wheel)
    where = subprocess.run(
        [str(python), "-c", "import papertrack.serving as s; print(s.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(tmp_path / "venv") in where  # the installed copy, not the checkout

    env = {**os.environ, "BENTOML_HOME": str(tmp_path / "bentoml"), "COLUMNS": "200"}
    archive = tmp_path / "out" / "papertrack.bento"
    built = subprocess.run(
        [str(python), "-m", "papertrack.cli", "build", "--export", str(archive)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    assert set(p.name for p in repo.iterdir()) == before  # nothing written into the checkout (no dist/)
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
        requirements = tar.extractfile("./env/python/requirements.txt").read().decode().splitlines()
    assert "./env/python/wheels/papertrack-0.1.0-py3-none-any.whl" in names
    assert any(name.endswith("mlflow_model/artifacts/predictor.pkl") for name in names)
    pinned = {line.split("==")[0] for line in requirements if "==" in line}
    assert {"scikit-learn", "numpy", "mlflow", "bentoml"} <= pinned, requirements  # the champion's own pins
    assert not any(line.startswith("papertrack") for line in requirements)
