"""Where an Apache Kafka broker's jars and a Java runtime come from.

In this order:

1. ``home`` (or the ``KCONSUMER_KAFKA_HOME`` environment variable): an Apache Kafka installation
   (the directory of the release archive, whose ``libs/`` holds the jars), used as it is;
2. the cache, ``$KCONSUMER_CACHE_DIR/kafka/<version>/libs`` (default ``~/.cache/kconsumer``,
   or ``$XDG_CACHE_HOME/kconsumer``), filled once by Maven and reused offline afterwards;
3. Maven (``mvn`` on the PATH) resolving the ``pom.xml`` beside this module from Maven Central
   into that cache.

Java comes from ``JAVA_HOME`` when set, else ``java`` on the PATH; Apache Kafka 4 needs Java 17
or newer. Whatever is missing is reported by one `ApacheKafkaUnavailable` that says what to
install or set.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: The Kafka version the project tests against, and the one `ApacheKafka` starts by default.
DEFAULT_VERSION = "4.4.0"
#: Apache Kafka 4.x: KRaft only, the consumer group protocol (KIP-848) generally available.
SUPPORTED = re.compile(r"^4\.\d+\.\d+$")
MINIMUM_JAVA = 17

_POM = Path(__file__).with_name("pom.xml")
_RESOLVE_TIMEOUT_S = 600.0


class ApacheKafkaUnavailable(RuntimeError):
    """Apache Kafka cannot be started here: what is missing and how to provide it."""


@dataclass(frozen=True)
class Distribution:
    """A Java runtime and the jars of one Kafka version."""

    version: str
    java: Path
    java_version: int
    libs: Path

    @property
    def classpath(self) -> str:
        """Every jar of the distribution, for ``java -cp``."""
        return os.pathsep.join(str(jar) for jar in sorted(self.libs.glob("*.jar")))


def cache_root() -> Path:
    """The directory kconsumer caches downloaded artifacts in."""
    configured = os.environ.get("KCONSUMER_CACHE_DIR")
    if configured:
        return Path(configured)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "kconsumer"


def find_java() -> tuple[Path, int]:
    """The ``java`` executable to run and its major version; `ApacheKafkaUnavailable` when there
    is none or it is older than Java 17."""
    java_home = os.environ.get("JAVA_HOME")
    candidate: str | None
    if java_home:
        candidate = str(Path(java_home) / "bin" / "java")
        if not os.access(candidate, os.X_OK):
            raise ApacheKafkaUnavailable(f"JAVA_HOME is {java_home}, but it has no bin/java")
    else:
        candidate = shutil.which("java")
        if candidate is None:
            raise ApacheKafkaUnavailable(
                f"Apache Kafka needs Java {MINIMUM_JAVA} or newer: no `java` on the PATH and no JAVA_HOME"
            )
    major = java_major_version(Path(candidate))
    if major < MINIMUM_JAVA:
        raise ApacheKafkaUnavailable(
            f"Apache Kafka 4 needs Java {MINIMUM_JAVA} or newer; {candidate} is Java {major} "
            "(set JAVA_HOME to a newer one)"
        )
    return Path(candidate), major


def java_major_version(java: Path) -> int:
    """The major version ``java -version`` reports (8 for ``1.8.0_x``)."""
    try:
        result = subprocess.run(
            [str(java), "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except OSError as exc:
        raise ApacheKafkaUnavailable(f"cannot run {java}: {exc}") from exc
    match = re.search(r'version "(\d+)(?:\.(\d+))?', result.stderr + result.stdout)
    if match is None:
        raise ApacheKafkaUnavailable(f"cannot tell the version of {java}: {result.stderr.strip()[:200]}")
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def check_version(version: str) -> None:
    """ValueError unless `version` is an Apache Kafka 4.x release number."""
    if not SUPPORTED.match(version):
        raise ValueError(
            f"version: an Apache Kafka 4.x release such as {DEFAULT_VERSION!r} "
            f"(KRaft and the consumer group protocol), got {version!r}"
        )


def installation_libs(home: Path) -> Path:
    """The ``libs/`` of an Apache Kafka installation; `ApacheKafkaUnavailable` if it is not one."""
    libs = home / "libs"
    if not any(libs.glob("kafka_2.13-*.jar")):
        raise ApacheKafkaUnavailable(f"{home} is not an Apache Kafka installation (no libs/kafka_2.13-*.jar)")
    return libs


def installation_version(libs: Path) -> str:
    """The version of the ``kafka_2.13-<version>.jar`` in `libs`."""
    for jar in libs.glob("kafka_2.13-*.jar"):
        match = re.fullmatch(r"kafka_2\.13-(\d+\.\d+\.\d+)\.jar", jar.name)
        if match:
            return match.group(1)
    raise ApacheKafkaUnavailable(f"cannot tell the Kafka version of {libs}")


def cached_libs(version: str) -> Path:
    """Where the jars of `version` are cached (whether or not they are there yet)."""
    return cache_root() / "kafka" / version / "libs"


def resolve_with_maven(version: str, target: Path) -> Path:
    """Resolve Kafka `version`'s jars with Maven into `target`. Returns `target`."""
    return copy_dependencies(
        _POM,
        target,
        {"kafka.version": version},
        what=f"Apache Kafka {version}",
        marker="kafka_2.13-*.jar",
        fallback="or set KCONSUMER_KAFKA_HOME to an Apache Kafka installation",
    )


def copy_dependencies(
    pom: Path, target: Path, properties: Mapping[str, str], *, what: str, marker: str, fallback: str = ""
) -> Path:
    """Resolve the dependencies of `pom` (with Maven ``-D`` `properties`) into `target`,
    atomically: a half-finished download is never taken for a cached one (a jar matching
    `marker` says the copy is complete). `ApacheKafkaUnavailable` names what failed."""
    if any(target.glob(marker)):
        return target
    maven = shutil.which("mvn")
    if maven is None:
        raise ApacheKafkaUnavailable(
            f"{what}'s jars are not cached in {target.parent} and Maven (`mvn`) is not on the PATH: "
            f"install Maven (it downloads them once from Maven Central){', ' + fallback if fallback else ''}"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="libs-", dir=target.parent))
    command = [
        maven,
        "-B",
        "-q",
        "-f",
        str(pom),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={staging}",
    ]
    command += [f"-D{key}={value}" for key, value in properties.items()]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=_RESOLVE_TIMEOUT_S)
        if result.returncode != 0 or not any(staging.glob(marker)):
            tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
            raise ApacheKafkaUnavailable(f"Maven could not resolve {what}:\n{tail}")
        try:
            staging.rename(target)
        except OSError:
            if not any(target.glob(marker)):  # not another process's finished copy
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def locate(version: str = DEFAULT_VERSION, home: str | os.PathLike[str] | None = None) -> Distribution:
    """Java and the jars of Kafka `version` (see the module docstring for where they come from)."""
    java, java_version = find_java()
    chosen_home = home if home is not None else os.environ.get("KCONSUMER_KAFKA_HOME")
    if chosen_home:
        libs = installation_libs(Path(chosen_home))
        return Distribution(installation_version(libs), java, java_version, libs)
    check_version(version)
    libs = resolve_with_maven(version, cached_libs(version))
    return Distribution(version, java, java_version, libs)
