# Run: python examples/memory_graph_main.py   (offline; with DEEPSEEK_API_KEY set it asks the model at MEMORY_GRAPH_API_URL, default https://api.deepseek.com)
"""Memory Graph's ``main.py`` demo, run on deepcontext.

Six rounds about otaku culture build a conversation DAG: each round is chained to the previous one,
the planner picks the nodes to load, packs old ones into summary nodes and keeps key memories; the
final state of the graph and of the memory store is printed.

The program is the seed's, with the import line changed (``modules`` becomes
``deepcontext.compat.memory_graph``) and an offline agent used when no API key is set, so that it
runs without a network. With a key, the model plans each round and answers it, as in Memory Graph;
offline, deepcontext's offline planner plans and summaries are extractive. MEMORY_GRAPH_API_URL
and MEMORY_GRAPH_MODEL point it at any OpenAI-compatible server.
"""

import asyncio
import os

from deepcontext.compat.memory_graph import ContextManager, LLMFetcher  # was: from modules import ...


class OfflineAgent:
    """Stands in for the LLM: answers with what it was asked, so the graph can be followed."""

    async def fetch(self, msg, system_prompt=None, temperature=0.4, max_tokens=4096, prev_messages=None):
        return f"(offline answer, {len(prev_messages or [])} context messages) {msg[:40]}"


def print_final_state(cm: ContextManager, latest_node_id: int) -> None:
    print(f"\n{'=' * 50}")
    print("最终状态总结")
    print("=" * 50)

    # ---- Active Graph ----
    print("\n【Active Graph 活跃图】")
    for nid, node in sorted(cm.graph.nodes.items()):
        if node.archived:
            continue
        marker = ""
        if node.is_summary:
            marker += " [摘要节点]"
        if nid == latest_node_id:
            marker += " <-- 最新节点"
        print(f"  Node {nid}: parents={node.parent_ids}, children={node.child_ids}{marker}")

    # ---- Archived Graph ----
    archived = {nid for nid, n in cm.graph.nodes.items() if n.archived}
    if archived:
        print("\n【Archived Graph 已归档节点】")
        for nid in sorted(archived):
            node = cm.graph.nodes[nid]
            print(f"  Node {nid}: summarized_by={node.summarized_by}, children={node.child_ids}")

    # ---- Active Path ----
    active_chain = cm.graph.get_ancestor_chain(latest_node_id, max_nodes=8, strategy="longest")
    print(f"\n活跃上下文路径 (Node {latest_node_id}): {active_chain}")
    print(f"所有祖先: {cm.graph.get_all_ancestors(latest_node_id)}")

    # ---- Pinned Memory ----
    print("\n【Pinned Memory 永久记忆】")
    pinned = cm.memory_store.get_pinned_memories()
    if not pinned:
        print("  （暂无）")
    for mem in pinned:
        print(f"  Memory {mem.id} [tags={mem.tags}]: {mem.content}")

    # ---- All Memory ----
    print("\n【All Memory 全部记忆】")
    all_mem = cm.memory_store.get_all_memories()
    if not all_mem:
        print("  （暂无）")
    for mem in all_mem:
        flags = []
        if mem.pinned:
            flags.append("pinned")
        if not mem.packable:
            flags.append("!packable")
        flag_str = f" [{', '.join(flags)}]" if flags else ""
        print(f"  Memory {mem.id}{flag_str} [tags={mem.tags}]: {mem.content[:80]}...")


QUESTIONS = [
    "请用一段话介绍日本御宅族（Otaku）文化的起源。",
    "御宅族这个词最早是怎么来的？它的词源和原始含义是什么？",
    "1980年代到1990年代，有哪些里程碑式的动画作品推动了御宅族文化的发展？",
    "基于你之前提到的词源，为什么'御宅'这个词从敬语变成了亚文化标签？",
    "进入2000年后，互联网和轻小说如何改变了御宅族文化的生态？",
    "综合以上所有讨论，你认为御宅族文化未来十年最可能向哪个方向发展？请结合你提取的关键记忆回答。",
]


async def main():
    api_key = os.environ.get("DEEPSEEK_API_KEY")
    if api_key:
        fetcher = LLMFetcher(
            api_url=os.environ.get("MEMORY_GRAPH_API_URL", "https://api.deepseek.com"),
            api_key=api_key,
            model=os.environ.get("MEMORY_GRAPH_MODEL", "deepseek-chat"),
            timeout=60.0,
        )
    else:
        print("DEEPSEEK_API_KEY is not set: running offline")
        fetcher = OfflineAgent()

    cm = ContextManager(
        fetcher=fetcher,
        max_context_nodes=6,
        pack_keep_recent=1,
    )

    # Round 0: no planning yet (the graph is empty); then each round chained to the one before
    n0 = await cm.chat(user_message=QUESTIONS[0], auto_plan=False)
    latest = n0
    for question in QUESTIONS[1:]:
        latest = await cm.chat(user_message=question, parent_ids={latest}, auto_plan=True)
        print(f"Node {latest}: {cm.graph.nodes[latest].context.llm_role.content[:60]}")

    print_final_state(cm, latest_node_id=latest)
    if isinstance(fetcher, LLMFetcher):
        await fetcher.aclose()


if __name__ == "__main__":
    asyncio.run(main())
