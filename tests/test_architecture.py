"""The rules of DESIGN.md that keep the layering honest, checked on the source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kconsumer"
SANS_IO = (
    "client/member",
    "client/application",
    "broker/coordinator",
    "broker/transactions",
    "protocol",
    "assignment",
    "workers/core.py",
    "workers/assignors.py",
    "workers/computation.py",
)
FORBIDDEN_IN_CORES = {"asyncio", "threading", "socket", "time", "random", "uuid", "secrets", "selectors"}
MAX_MODULE_LINES = 600


def _modules(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def _imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def _imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, by its full dotted name: relative imports are resolved, and
    ``from package import name`` counts as importing ``package.name`` too (it may be a module)."""
    package = list(path.relative_to(PACKAGE.parent).parts[:-1])  # for __init__.py: the package itself
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _importers_of(roots: tuple[str, ...], prefixes: tuple[str, ...]) -> dict[str, list[str]]:
    """The modules under `roots` (folders of the package) that import anything under `prefixes`."""
    offenders: dict[str, list[str]] = {}
    for root in roots:
        for path in _modules(PACKAGE / root):
            bad = sorted(m for m in _imported_modules(path) if m.startswith(prefixes))
            if bad:
                offenders[str(path.relative_to(PACKAGE))] = bad
    return offenders


def test_import_resolution() -> None:
    """The resolver above: absolute, relative (``.``, ``..``, ``from . import``), in packages."""
    found = _imported_modules(PACKAGE / "client" / "runtime" / "member_runtime.py")
    assert {"kconsumer.client.member.cluster", "kconsumer.client.config", "asyncio"} <= found
    assert "kconsumer.client.runtime.connection" in found
    serve = PACKAGE / "broker" / "server" / "serve.py"
    assert "kconsumer.broker.coordinator.assignors" in _imported_modules(serve)
    assert "kconsumer.assignment.builtin" in _imported_modules(PACKAGE / "__init__.py")


def test_the_client_and_the_shared_layers_never_import_the_broker() -> None:
    """DESIGN.md: the client (consumers and workers) never imports the broker; what both need is in
    assignment/ or protocol/."""
    offenders = _importers_of(("client", "workers", "assignment", "protocol"), ("kconsumer.broker",))
    assert not offenders, f"modules importing kconsumer.broker: {offenders}"


def test_assignment_imports_neither_side() -> None:
    """assignment/ lies below the client and the broker, and the testing tools."""
    sides = ("kconsumer.client", "kconsumer.broker", "kconsumer.testing")
    offenders = _importers_of(("assignment",), sides)
    assert not offenders, f"assignment/ modules importing the client, the broker or testing: {offenders}"


@pytest.mark.parametrize("core", SANS_IO)
def test_sans_io_cores_import_no_io_clock_or_randomness(core: str) -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(_imported_roots(path) & FORBIDDEN_IN_CORES)
        for path in _modules(PACKAGE / core)
    }
    offenders = {name: found for name, found in offenders.items() if found}
    assert not offenders, f"sans-IO modules import I/O, clock or randomness: {offenders}"


def test_aiokafka_is_imported_in_one_module_only() -> None:
    importers = [
        str(path.relative_to(PACKAGE)) for path in _modules(PACKAGE) if "aiokafka" in _imported_roots(path)
    ]
    assert importers == ["protocol/_aiokafka.py"]


def test_modules_stay_small() -> None:
    too_long = {
        str(path.relative_to(PACKAGE)): n
        for path in _modules(PACKAGE)
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not too_long, f"modules over {MAX_MODULE_LINES} lines (split them): {too_long}"


# -- one member session, two drivers ------------------------------------------------------------------

#: The drivers of the member session: the asyncio runtime and the simulated member process.
DRIVERS = ("client/runtime/member_runtime.py", "testing/sim/runtime.py")
#: What only the session may know: request messages (it builds every request and reads every
#: answer), the core, and its request and answer modules.
SESSION_ONLY = (
    "kconsumer.protocol.messages",
    "kconsumer.client.member.core",
    "kconsumer.client.member.calls",
    "kconsumer.client.member.offset_requests",
    "kconsumer.client.member.errors",
)


@pytest.mark.parametrize("driver", DRIVERS)
def test_both_drivers_run_the_one_member_session(driver: str) -> None:
    """The runtime and the simulation drive `MemberSession` (constructed, then fed events) and
    build no request themselves: no routing policy is written twice."""
    path = PACKAGE / driver
    source = path.read_text()
    assert "MemberSession(" in source and ".handle(" in source, f"{driver} does not drive MemberSession"
    imported = _imported_modules(path)
    assert "kconsumer.client.member.MemberSession" in imported
    assert not sorted(m for m in imported if m.startswith(SESSION_ONLY)), f"{driver} knows the protocol"


def test_only_the_session_builds_group_requests() -> None:
    """Group and cluster requests (heartbeat, offsets, metadata, coordinator lookup, assignment)
    are built inside client/member only, on the client side."""
    builders = (
        "ConsumerGroupHeartbeatRequest(",
        "OffsetCommitRequest(",
        "OffsetFetchRequest(",
        "FindCoordinatorRequest(",
        "ConsumerGroupPrepareAssignmentRequest(",
        "ConsumerGroupInstallAssignmentRequest(",
        "ListOffsetsRequest(",
        "MetadataRequest(",
    )
    offenders = {
        str(path.relative_to(PACKAGE)): [b for b in builders if b in path.read_text()]
        for path in _modules(PACKAGE / "client")
        if "member" not in path.relative_to(PACKAGE / "client").parts
    }
    offenders = {name: found for name, found in offenders.items() if found}
    assert not offenders, f"client modules outside the member session build requests: {offenders}"


def test_the_groups_cli_builds_no_request_itself() -> None:
    """`kconsumer groups` takes every request from the shared builders in client/member
    (`admin_requests`, `ClusterView`), as the member session does: no protocol message is
    constructed under groups/."""
    offenders = {}
    for path in _modules(PACKAGE / "groups"):
        built = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", getattr(node.func, "attr", ""))
                if name.endswith(("Request", "RequestTopic", "RequestPartition")):
                    built.add(name)
        if built:
            offenders[path.name] = sorted(built)
    assert not offenders, f"groups/ builds requests itself: {offenders}"


def test_a_client_only_process_loads_no_broker_module() -> None:
    """Importing kconsumer and creating a Consumer loads nothing of the reference broker."""
    import subprocess
    import sys

    code = (
        "import sys, kconsumer;"
        "c = kconsumer.Consumer({'bootstrap.servers': 'localhost:1', 'group.id': 'g'});"
        "c.close(0.1);"
        "print(sorted(m for m in sys.modules if m.startswith('kconsumer.broker')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stdout


def test_harness_clusters_answer_with_the_brokers_own_handlers() -> None:
    """The Metadata and FindCoordinator answers of the clusters without sockets (the simulation's
    brokers, the scripted session) come from the reference broker's handlers, not from a copy."""
    path = PACKAGE / "testing" / "cluster_answers.py"
    imported = _imported_modules(path)
    assert {"kconsumer.broker.server.metadata.handle_metadata"} <= imported, sorted(imported)
    assert {"kconsumer.broker.server.metadata.handle_find_coordinator"} <= imported, sorted(imported)
    builders = ("MetadataResponse(", "MetadataResponseTopic(", "FindCoordinatorResponse(", "Coordinator(")
    copies = [name for name in builders if name in path.read_text()]
    assert not copies, f"cluster_answers builds answers itself: {copies}"


def test_the_groups_admin_negotiates_and_retries_as_the_member() -> None:
    """`kconsumer groups` reads ApiVersions answers and retries coordinator requests with the
    member session's shared pieces, not with a table or a fallback of its own."""
    path = PACKAGE / "groups" / "admin.py"
    imported = _imported_modules(path)
    shared = {
        "kconsumer.client.member.errors.COORDINATOR_RETRIES",
        "kconsumer.protocol.negotiation.api_versions_outcome",
        "kconsumer.client.member.cluster.ClusterView",
    }
    assert shared <= imported, sorted(shared - imported)
    text = path.read_text()
    own = [marker for marker in ("frozenset(", "UNSUPPORTED_VERSION", "broker_versions(") if marker in text]
    assert not own, f"groups/admin.py decides negotiation or retries itself: {own}"


def _private_attributes_of(path: Path, names: set[str]) -> set[str]:
    """Private attributes (``_x``) read or written on the objects `names` in `path`."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in names:
                found.add(f"{owner.id}.{node.attr}")
            elif isinstance(owner, ast.Attribute) and owner.attr in names:
                found.add(f"{owner.attr}.{node.attr}")
    return found


def test_the_asyncio_consumer_and_the_consumer_reach_into_each_other_nowhere() -> None:
    """AIOConsumer drives the consumer's engine through its public steps (ConsumerEngine), never
    a private member of the blocking Consumer, and the reverse."""
    aio = PACKAGE / "aio" / "consumer.py"
    assert not _private_attributes_of(aio, {"consumer", "_consumer", "engine", "_engine"})
    for path in sorted((PACKAGE / "client").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                assert "aio" not in (node.module or "").split("."), path


def test_the_member_state_and_the_classic_phase_change_only_through_their_tables() -> None:
    """Outside `__init__`, `MemberCore._state` and `ClassicExchange.phase` are assigned only by
    `_to`, which checks the machine's `TransitionTable`."""
    for module, attribute in (("core.py", "_state"), ("classic_exchange.py", "phase")):
        path = PACKAGE / "client" / "member" / module
        for function in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(function, ast.FunctionDef) or function.name in ("__init__", "_to"):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        assigned = isinstance(target, ast.Attribute) and target.attr == attribute
                        assert not assigned, f"{module}:{node.lineno} sets {attribute} outside _to"
