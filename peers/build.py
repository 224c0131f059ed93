"""Builds the peers nobody here wrote into runnable commands, once per source version, in the
kconsumer cache (`kconsumer.testing.apache_kafka.distribution.cache_root`):

* the Apache Kafka Java client (kafka-clients from Maven Central) driven by `java/KafkaPeer.java`;
* franz-go (from the Go module proxy) driven by `go/main.go`.

Each returns the command prefix to run, or raises `PeerUnavailable` saying what is missing.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import threading
from pathlib import Path

from kconsumer.testing.apache_kafka.distribution import (
    DEFAULT_VERSION,
    ApacheKafkaUnavailable,
    cache_root,
    copy_dependencies,
    find_java,
)

HERE = Path(__file__).resolve().parent
_LOCK = threading.Lock()


class PeerUnavailable(RuntimeError):
    """A peer cannot be built here (its toolchain or packages are missing)."""


def _digest(*paths: Path) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def java_peer(version: str = DEFAULT_VERSION) -> list[str]:
    """``java -cp ... KafkaPeer``: the Java client `version` behind `java/KafkaPeer.java`."""
    with _LOCK:
        try:
            java, _major = find_java()
            source = HERE / "java" / "KafkaPeer.java"
            pom = HERE / "java" / "pom.xml"
            base = cache_root() / "java-peer" / version
            libs = copy_dependencies(
                pom,
                base / "libs",
                {"kafka.version": version},
                what=f"kafka-clients {version}",
                marker="kafka-clients-*.jar",
            )
        except ApacheKafkaUnavailable as exc:
            raise PeerUnavailable(str(exc)) from exc
        classpath = os.pathsep.join(str(jar) for jar in sorted(libs.glob("*.jar")))
        classes = base / f"classes-{_digest(source)}"
        if not (classes / "KafkaPeer.class").exists():
            javac = java.with_name("javac")
            if not javac.exists():
                found = shutil.which("javac")
                if found is None:
                    raise PeerUnavailable("the Java peer needs a JDK (javac), not only a Java runtime")
                javac = Path(found)
            staging = base / f"staging-{os.getpid()}"
            shutil.rmtree(staging, ignore_errors=True)
            result = subprocess.run(
                [str(javac), "-d", str(staging), "-cp", classpath, str(source)],
                capture_output=True,
                text=True,
                timeout=300,
            )
            if result.returncode != 0:
                raise PeerUnavailable(f"javac failed:\n{result.stderr[-3000:]}")
            staging.rename(classes)
        return [
            str(java),
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
            os.pathsep.join([str(classes), classpath]),
            "KafkaPeer",
        ]


def go_peer() -> list[str]:
    """The franz-go peer binary built from `go/` (Go modules from the module proxy)."""
    with _LOCK:
        go = shutil.which("go")
        if go is None:
            raise PeerUnavailable("the franz-go peer needs Go (`go` on the PATH)")
        source = HERE / "go"
        digest = _digest(source / "main.go", source / "go.mod", source / "go.sum")
        binary = cache_root() / "franz-go-peer" / f"peer-{digest}"
        if not binary.exists():
            binary.parent.mkdir(parents=True, exist_ok=True)
            staging = binary.with_name(f"{binary.name}.{os.getpid()}")
            env = {**os.environ, "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
            result = subprocess.run(
                [go, "build", "-o", str(staging), "."],
                cwd=source,
                capture_output=True,
                text=True,
                timeout=600,
                env=env,
            )
            if result.returncode != 0:
                raise PeerUnavailable(f"go build failed:\n{result.stderr[-3000:]}")
            staging.rename(binary)
        return [str(binary)]
