"""Serving: uvicorn with sglang's log format, and the warmup that flips /health from 503 to 200.

As in sglang-kt, uvicorn binds the port only after the model is "loaded" (a busy port fails here, with
uvicorn's own `[Errno 98] error while attempting to bind on address ...` and exit status 3), connections
are refused until `Uvicorn running on ...`, and a warmup generation runs once the server listens;
`The server is fired up and ready to roll!` follows it.
"""

from __future__ import annotations

import asyncio

import uvicorn
from fastapi import FastAPI

from launch.sim.engine import Engine
from launch.sim.logs import uvicorn_log_config
from launch.sim.scheduler import Job
from launch.sim.tokens import tokenize

WARMUP_PROMPT = "The capital city of France is"  # http_server._execute_server_warmup's text
WARMUP_OUTPUT = " Paris, a city on the Seine."


async def _warmup(server: uvicorn.Server, engine: Engine, seconds: float) -> None:
    while not server.started:
        await asyncio.sleep(0.01)
    await asyncio.sleep(seconds)
    job = Job("warmup", "warmup", tuple(tokenize(WARMUP_PROMPT)), tuple(tokenize(WARMUP_OUTPUT))[:8], 8)
    async for _ in engine.scheduler.generate(job):
        pass
    engine.ready = True
    engine.log.info("The server is fired up and ready to roll!")


async def _serve(server: uvicorn.Server, engine: Engine, warmup_seconds: float) -> None:
    warmup = asyncio.create_task(_warmup(server, engine, warmup_seconds))
    try:
        await server.serve()
    finally:
        warmup.cancel()


def serve(engine: Engine, app: FastAPI, warmup_seconds: float) -> None:
    """Run until stopped; a port that cannot be bound ends the process with uvicorn's status 3."""
    settings = engine.plan.settings
    # A stop must not wait for a long stream to finish: the real engine goes down at once too.
    config = uvicorn.Config(app, host=settings.host, port=settings.port, log_config=uvicorn_log_config(),
                            timeout_keep_alive=5, timeout_graceful_shutdown=1)
    asyncio.run(_serve(uvicorn.Server(config), engine, warmup_seconds))
