"""Start the real ``engram-ls`` process over stdio with pytest-lsp, as VS Code or Neovim would."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features

from engram_ls.lsp.server import converter_factory
from tests.conftest import copy_tree

SERVER = [sys.executable, "-m", "engram_ls.lsp"]
PRESETS = ["visual-studio-code", "neovim"]


def capabilities(preset: str) -> types.ClientCapabilities:
    """The editor's preset, plus the capabilities Engram uses when an editor offers them."""
    caps = client_capabilities(preset)
    ws = caps.workspace or types.WorkspaceClientCapabilities()
    if preset == "visual-studio-code":
        ws.file_operations = types.FileOperationClientCapabilities(
            dynamic_registration=True, did_create=True, did_rename=True, did_delete=True
        )
        ws.did_change_watched_files = types.DidChangeWatchedFilesClientCapabilities(
            dynamic_registration=True
        )
    else:  # Neovim on Linux: no dynamic file watching; the server watches by itself
        ws.did_change_watched_files = types.DidChangeWatchedFilesClientCapabilities(
            dynamic_registration=False
        )
    caps.workspace = ws
    window = caps.window or types.WindowClientCapabilities()
    window.work_done_progress = True
    caps.window = window
    return caps


def install_registration_handler(client: LanguageClient) -> list[types.Registration]:
    """pytest-lsp's client has no client/registerCapability handler: record and accept."""
    registered: list[types.Registration] = []

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams) -> None:
        registered.extend(params.registrations)

    return registered


async def start(
    client: LanguageClient,
    roots: list[Path],
    preset: str,
    options: dict[str, Any] | None = None,
) -> None:
    client.registered = install_registration_handler(client)  # type: ignore[attr-defined]
    await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities(preset),
            workspace_folders=[types.WorkspaceFolder(uri=r.as_uri(), name=r.name) for r in roots],
            initialization_options=options,
        )
    )


async def request(client: LanguageClient, method: str, params: Any, timeout: float = 30) -> Any:
    return await asyncio.wait_for(client.protocol.send_request_async(method, params), timeout)


async def wait_ready(client: LanguageClient, timeout: float = 60) -> dict[str, Any]:
    """Poll engram/status until every vault is built."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        status = await request(client, "engram/status", {})
        vaults = status["vaults"]
        if vaults and all(v["state"] == "ready" and not v["building"] for v in vaults):
            return status  # type: ignore[no-any-return]
        if loop.time() > end:
            shown = [m.message for m in client.messages]
            raise AssertionError(f"index not ready: {status}; messages: {shown}")
        await asyncio.sleep(0.05)


async def search(client: LanguageClient, **params: Any) -> dict[str, Any]:
    result: dict[str, Any] = await request(client, "engram/search", params)
    return result


def paths(result: dict[str, Any]) -> list[str]:
    return sorted(r["path"] for r in result["results"])


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``preset``: both client presets for a test marked ``presets`` (watching, file operations
    and position encoding differ between them); one preset for every other test, whose
    behaviour is the same under both."""
    if "preset" not in metafunc.fixturenames or _parametrized(metafunc, "preset"):
        return
    both = metafunc.definition.get_closest_marker("presets") is not None
    metafunc.parametrize("preset", PRESETS if both else PRESETS[:1])


def _parametrized(metafunc: pytest.Metafunc, name: str) -> bool:
    """The test parametrizes ``name`` itself (``@pytest.mark.parametrize``)."""
    return any(name in _names(m.args[0]) for m in metafunc.definition.iter_markers("parametrize"))


def _names(argnames: str | list[str] | tuple[str, ...]) -> list[str]:
    if isinstance(argnames, str):
        return [n.strip() for n in argnames.split(",")]
    return list(argnames)


@pytest.fixture
def copy(tmp_path: Path) -> Callable[[Path, str], Path]:
    def make(src: Path, name: str) -> Path:
        return copy_tree(src, tmp_path / name)

    return make


def make_client() -> LanguageClient:
    """pytest-lsp's test client, keeping custom results as plain dicts (like the server)."""
    client = LanguageClient(converter_factory=converter_factory)
    register_lsp_features(client)
    refreshed: list[str] = []
    client.refreshed = refreshed  # type: ignore[attr-defined]

    # What VS Code does on these (its preset says it can): ask again for what is visible.
    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def code_lens_refresh(params: None) -> None:
        refreshed.append("codeLens")

    @client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def inlay_hint_refresh(params: None) -> None:
        refreshed.append("inlayHint")

    return client


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=make_client))
async def client(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    """A started server process; each test initializes it with its own folders."""
    yield lsp_client
    await lsp_client.shutdown_session()


@contextlib.asynccontextmanager
async def lsp_session(
    roots: list[Path],
    preset: str = "neovim",
    env: dict[str, str] | None = None,
    options: dict[str, Any] | None = None,
) -> AsyncIterator[LanguageClient]:
    """A real ``engram-ls`` process, initialized with ``roots`` (and ``initializationOptions``);
    shut down (or killed) after."""
    config = ClientServerConfig(
        server_command=SERVER, client_factory=make_client, server_env={**os.environ, **(env or {})}
    )
    client: Any = await config.start()
    try:
        await start(client, roots, preset, options)
        yield client
        await asyncio.wait_for(client.shutdown_session(), 30)
    finally:
        proc = getattr(client, "_server", None)
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()  # the test failed before a clean shutdown: ours, by its pid
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.stop(), 30)


@dataclass(frozen=True)
class Shared:
    """A server shared by the tests of a module, over its own copies of fixture vaults."""

    client: LanguageClient
    root: Path
    roots: dict[str, Path]
    preset: str


def shared_server(src: Path, name: str, preset: str | list[str] = PRESETS[0], **more: Path) -> Any:
    """A module-scoped fixture: one ``engram-ls`` over a copy of ``src`` (named ``name``), and
    of each of ``more`` (name=source) as further workspace folders, built, for the tests of a
    module that only read (they open unsaved buffers and close them; none writes a file or
    changes settings). ``root`` is the first copy; ``roots`` every copy by name. With a list
    of presets, one server per preset, and each test runs under each. Its tests run in the
    module's event loop: mark them ``@pytest.mark.asyncio(loop_scope="module")``."""

    @pytest_asyncio.fixture(
        scope="module", loop_scope="module", params=[preset] if isinstance(preset, str) else preset
    )
    async def fixture(
        request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
    ) -> AsyncIterator[Shared]:
        base = tmp_path_factory.mktemp(f"shared-{name}")
        roots = {n: copy_tree(s, base / n) for n, s in {name: src, **more}.items()}
        async with lsp_session(list(roots.values()), request.param) as client:
            await wait_ready(client)
            yield Shared(client, roots[name], roots, request.param)

    return fixture
