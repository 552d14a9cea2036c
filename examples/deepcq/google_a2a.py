# Run: python examples/deepcq/google_a2a.py   (offline: no LLM; prints the agent card and the answer to one A2A request)
"""deepcq behind an agent of Google's Agent2Agent (A2A) protocol: the agent publishes its card,
and answers a JSON-RPC ``message/send`` with the memory sections relevant to the message.

deepcq's import lines with ``deepcq`` replaced by ``deepcontext.compat.deepcq``. The A2A messages
are plain JSON (no SDK needed); serve ``handle`` behind any HTTP server to expose the agent.
"""

import json
import uuid

from deepcontext.compat.deepcq import DeepCQ, MemorySchema

cq = DeepCQ(schema=MemorySchema(sections=["orders", "shipping", "returns"]))
cq.state.set("orders", "[orders]\nOrder 1042: two keyboards, paid.\n")
cq.state.set("shipping", "[shipping]\nOrder 1042 left the warehouse on Tuesday; tracking DHL 77812.\n")
cq.state.set("returns", "[returns]\nReturns are accepted within 30 days.\n")

AGENT_CARD = {
    "name": "order-memory",
    "description": "Answers questions about orders from the shop's memory",
    "version": "1.0.0",
    "capabilities": {"streaming": False},
    "defaultInputModes": ["text/plain"],
    "defaultOutputModes": ["text/plain"],
    "skills": [{"id": "recall", "name": "Recall", "description": "Relevant memory for a question", "tags": ["memory"]}],
}


def handle(request: dict) -> dict:
    """One JSON-RPC 2.0 request of the A2A protocol."""
    if request.get("method") != "message/send":
        return {"jsonrpc": "2.0", "id": request.get("id"), "error": {"code": -32601, "message": "Method not found"}}
    message = request["params"]["message"]
    text = " ".join(p["text"] for p in message["parts"] if p.get("kind") == "text")
    result = cq.query(text)
    reply = {
        "kind": "message",
        "role": "agent",
        "messageId": str(uuid.uuid4()),
        "parts": [{"kind": "text", "text": result.content}],
        "metadata": {"sections": result.sections_included},
    }
    return {"jsonrpc": "2.0", "id": request.get("id"), "result": reply}


def main() -> None:
    print(json.dumps(AGENT_CARD, indent=2))
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "message/send",
        "params": {
            "message": {
                "role": "user",
                "messageId": "m1",
                "parts": [{"kind": "text", "text": "where is my shipping for order 1042?"}],
            }
        },
    }
    print(json.dumps(handle(request), indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
