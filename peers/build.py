"""Builds the peers nobody here wrote into runnable commands, once per source version, in the
kconsumer cache (`kconsumer.testing.apache_kafka.distribution.cache_root`):

* the Apache Kafka Java client (kafka-clients from Maven Central) driven by `java/KafkaPeer.java`;
* Kafka Connect's distributed worker (connect-runtime from Maven Central), with the small
  source connector of `connect/TickSource.java`;
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


def _java_program(name: str, source: Path, pom: Path, cache: str, marker: str, version: str) -> list[str]:
    """``java ... -cp CLASSES:JARS``: `source` compiled against the jars `pom` resolves (once per
    source and version, in the cache)."""
    try:
        java, _major = find_java()
        base = cache_root() / cache / version
        libs = copy_dependencies(
            pom, base / "libs", {"kafka.version": version}, what=f"{name} {version}", marker=marker
        )
    except ApacheKafkaUnavailable as exc:
        raise PeerUnavailable(str(exc)) from exc
    classpath = os.pathsep.join(str(jar) for jar in sorted(libs.glob("*.jar")))
    classes = base / f"classes-{_digest(source)}"
    if not (classes / f"{source.stem}.class").exists():
        javac = java.with_name("javac")
        if not javac.exists():
            found = shutil.which("javac")
            if found is None:
                raise PeerUnavailable(f"the {name} peer needs a JDK (javac), not only a Java runtime")
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
        publish(staging, classes, f"{source.stem}.class")
    return [
        str(java),
        "-Xmx256m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp",
        os.pathsep.join([str(classes), classpath]),
    ]


def publish(staging: Path, classes: Path, marker: str) -> None:
    """Move a finished compile (`staging`) to `classes`. Processes that start at once (a
    benchmark's group members) may each compile the same source: the first to finish puts its
    classes there, and a later one, finding `marker` in place, drops its own copy."""
    try:
        staging.rename(classes)
    except OSError:
        if not (classes / marker).exists():
            raise
        shutil.rmtree(staging, ignore_errors=True)


def java_peer(version: str = DEFAULT_VERSION) -> list[str]:
    """``java -cp ... KafkaPeer``: the Java client `version` behind `java/KafkaPeer.java`."""
    with _LOCK:
        java = HERE / "java"
        command = _java_program(
            "kafka-clients",
            java / "KafkaPeer.java",
            java / "pom.xml",
            "java-peer",
            "kafka-clients-*.jar",
            version,
        )
        return [*command, "KafkaPeer"]


def connect_worker(version: str = DEFAULT_VERSION) -> list[str]:
    """``java -cp ... ConnectDistributed``: Kafka Connect `version`'s distributed worker
    (connect-runtime from Maven Central), with `connect/TickSource.java` on its class path;
    append the worker's properties file."""
    with _LOCK:
        connect = HERE / "connect"
        command = _java_program(
            "connect-runtime",
            connect / "TickSource.java",
            connect / "pom.xml",
            "connect-peer",
            "connect-runtime-*.jar",
            version,
        )
        return [*command, "org.apache.kafka.connect.cli.ConnectDistributed"]


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
