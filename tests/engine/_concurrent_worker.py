"""Run by test_concurrency in separate processes: add many batches to one database file."""

from __future__ import annotations

import asyncio
import sys

from deepcontext import DeepContext
from deepcontext.embed import HashEmbedder


async def main(url: str, worker: str, n: int) -> None:
    async with DeepContext(database_url=url, embedder=HashEmbedder(256)) as ctx:
        for i in range(n):
            await ctx.add(
                [
                    {"role": "user", "content": f"Worker {worker} says fact {i}: I like colour {i * 7 % 13}."},
                    {"role": "assistant", "content": f"Noted {worker}-{i}."},
                ],
                user_id="shared",
                conversation_id="same",
            )
            await ctx.search(f"colour {i}", user_id="shared", limit=5)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
