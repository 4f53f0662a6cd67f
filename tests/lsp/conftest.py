"""Start the real ``engram-ls`` process over stdio with pytest-lsp, as VS Code or Neovim would."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
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


@pytest.fixture(params=PRESETS)
def preset(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def copy(tmp_path: Path) -> Callable[[Path, str], Path]:
    def make(src: Path, name: str) -> Path:
        return copy_tree(src, tmp_path / name)

    return make


def make_client() -> LanguageClient:
    """pytest-lsp's test client, keeping custom results as plain dicts (like the server)."""
    client = LanguageClient(converter_factory=converter_factory)
    register_lsp_features(client)
    return client


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=make_client))
async def client(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    """A started server process; each test initializes it with its own folders."""
    yield lsp_client
    await lsp_client.shutdown_session()
