# Run: python examples/chat_demo.py   (interactive; offline without an LLM, or set DEEPCONTEXT_LLM_BASE_URL / DEEPCONTEXT_OPENAI_API_KEY)
"""DeepContext 0.1's interactive chat demo, run on deepcontext.

A chatbot that remembers conversations across turns. Type a message to chat; special commands:
``memories`` (search stored memories), ``graph <entity>`` (the knowledge graph around an entity),
``lifecycle`` (decay / consolidation / cleanup), ``exit``.

The answers come from the LLM deepcontext is configured with (DEEPCONTEXT_LLM_BASE_URL for any
OpenAI-compatible server, DEEPCONTEXT_OPENAI_API_KEY for OpenAI, DEEPCONTEXT_LLM_MODEL), the one
that also extracts the memories. Without one, the demo still runs: memories are extracted offline
and the "answer" lists what it remembers about the message.
"""

import asyncio

from deepcontext.compat.deepcontext01 import DeepContext


async def main() -> None:
    # 1. Initialize DeepContext (settings from DEEPCONTEXT_* variables or .env)
    ctx = DeepContext()
    await ctx.init()

    # 2. The chat model: deepcontext's own LLM client, None when no LLM is configured
    llm = ctx.llm
    user_id = "demo_user"
    conversation_id = "demo_conv_1"

    print("=" * 50)
    print("DeepContext Chat Demo" + ("" if llm else " (offline: no LLM configured)"))
    print("=" * 50)
    print("Type 'exit' to quit")
    print("Type 'memories' to search your memories")
    print("Type 'graph <entity>' to explore the knowledge graph")
    print("Type 'lifecycle' to run memory maintenance")
    print("-" * 50)

    while True:
        try:
            user_input = input("\nYou: ").strip()
        except EOFError:  # input piped in and used up
            break
        if not user_input:
            continue
        if user_input.lower() == "exit":
            break

        # --- Special commands ---

        if user_input.lower() == "memories":
            try:
                query = input("Search query: ").strip()
            except EOFError:
                break
            results = await ctx.search(query or "*", user_id=user_id, limit=10)
            print(f"\n--- {results.total} memories found ---")
            for r in results.results:
                print(f"  [{r.tier.value}|{r.memory_type.value}] {r.text} (score: {r.score:.3f})")
            continue

        if user_input.lower().startswith("graph "):
            entity = user_input[6:].strip()
            neighbors = await ctx.get_entity_graph(user_id, entity, depth=2)
            print(f"\n--- Graph for '{entity}' ---")
            for n in neighbors:
                print(f"  --[{n['relation']}]--> {n['entity']} ({n['entity_type']})")
            if not neighbors:
                print("  No connections found.")
            continue

        if user_input.lower() == "lifecycle":
            result = await ctx.run_lifecycle(user_id)
            print("\n--- Lifecycle ---")
            print(f"  Decayed: {result['memories_decayed']}")
            print(f"  Consolidated: {result['memories_consolidated']}")
            print(f"  Cleaned: {result['memories_cleaned']}")
            continue

        # --- Normal chat ---

        # Search for relevant memories
        memory_results = await ctx.search(user_input, user_id=user_id, limit=5)
        memories_str = "\n".join(f"- [{r.memory_type.value}] {r.text}" for r in memory_results.results)

        # Generate response with memory context
        if llm is not None:
            system_prompt = (
                "You are a helpful AI assistant with persistent memory.\n"
                "Use the user's memories to personalize your responses.\n\n"
                f"User Memories:\n{memories_str or 'No memories yet.'}"
            )
            completion = await llm.chat([{"role": "system", "content": system_prompt}, {"role": "user", "content": user_input}])
            assistant_response = completion.text
        else:
            assistant_response = "I remember:\n" + memories_str if memories_str else "Noted."
        print(f"\nAI: {assistant_response}")

        # Store memories from this turn
        add_result = await ctx.add(
            messages=[
                {"role": "user", "content": user_input},
                {"role": "assistant", "content": assistant_response},
            ],
            user_id=user_id,
            conversation_id=conversation_id,
        )

        if add_result.memories_added > 0:
            print(f"  [+{add_result.memories_added} memories stored]")

    # Cleanup
    await ctx.close()
    print("Goodbye!")


if __name__ == "__main__":
    asyncio.run(main())
