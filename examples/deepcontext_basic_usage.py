# Run: python examples/deepcontext_basic_usage.py   (offline; an LLM is used when DEEPCONTEXT_LLM_BASE_URL or DEEPCONTEXT_OPENAI_API_KEY is set)
"""DeepContext 0.1's "Basic Usage", run on deepcontext.

The program is the 0.1 README's, with two changes: the import line, for 0.1's get_entity_graph
(``[]`` for an unknown entity, the neighbours without the entity itself), and no key written in the
code: settings come from DEEPCONTEXT_* variables or a .env file, and without an LLM everything runs
offline, with rule-based extraction and a local embedding model.
"""

import asyncio

from deepcontext.compat.deepcontext01 import DeepContext  # was: from deepcontext import DeepContext


async def main():
    ctx = DeepContext()  # was: DeepContext(openai_api_key="sk-...")
    await ctx.init()

    # Store memories from a conversation
    response = await ctx.add(
        messages=[
            {"role": "user", "content": "I'm a Python developer working at Acme Corp"},
            {"role": "assistant", "content": "Nice to meet you!"},
        ],
        user_id="user_1",
        conversation_id="conv_1",
    )
    print(f"Stored {response.memories_added} memories, found {response.entities_found} entities")

    # Search memories
    results = await ctx.search("What does the user do for work?", user_id="user_1")
    for r in results.results:
        print(f"  [{r.tier.value}] {r.text} (score: {r.score:.3f})")

    # Explore the knowledge graph
    neighbors = await ctx.get_entity_graph("user_1", "Acme Corp", depth=2)
    for n in neighbors:
        print(f"  {n['entity']} --{n['relation']}--> (depth {n['depth']})")

    # Run lifecycle maintenance (decay + consolidation + cleanup)
    stats = await ctx.run_lifecycle("user_1")
    print(f"Decayed: {stats['memories_decayed']}, Consolidated: {stats['memories_consolidated']}")

    await ctx.close()


asyncio.run(main())
