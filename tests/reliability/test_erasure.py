"""delete_user removes the user's words from the SQLite file (rows, keyword index, WAL), not only
from what queries can see."""

from __future__ import annotations

from pathlib import Path

from deepcontext import DeepContext
from deepcontext.embed import HashEmbedder

SECRET = "Quokkamandrel"  # a word the porter stemmer leaves whole


async def test_deleted_users_words_leave_the_sqlite_file(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    async with DeepContext(database_url=f"sqlite:///{db}", embedder=HashEmbedder(64)) as ctx:
        for i in range(30):  # several index segments
            await ctx.add([{"role": "user", "content": f"My password hint number {i} is {SECRET} {i}"}], user_id="leaver")
            await ctx.add([{"role": "user", "content": f"I keep {i} tomato plants on the balcony"}], user_id="stayer")
        assert (await ctx.search(SECRET, user_id="leaver")).results
        await ctx.delete_user("leaver")
        assert (await ctx.search("tomato", user_id="stayer")).results  # the index still works
        files = [p for p in tmp_path.iterdir() if p.name.startswith("m.db")]
        for needle in (SECRET.encode(), SECRET.lower().encode()):
            assert not [p.name for p in files if needle in p.read_bytes()]
