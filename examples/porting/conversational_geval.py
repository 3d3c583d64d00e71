"""DeepEval's documented ConversationalGEval, without evaluation_params."""

from anvil_local import ConversationalGEval, ConversationalTestCase, Turn

conversation = ConversationalTestCase(
    turns=[
        Turn(role="user", content="My order arrived damaged. What can I do?"),
        Turn(
            role="assistant",
            content="I am sorry to hear that. I can send a replacement today or refund you "
            "in full; which would you prefer?",
        ),
        Turn(role="user", content="A replacement, please."),
        Turn(role="assistant", content="Done: the replacement ships today, at no cost."),
    ]
)
professionalism = ConversationalGEval(
    name="Professionalism",
    criteria="Determine whether the assistant has acted professionally based on the content.",
)
professionalism.measure(conversation)
print(f"{professionalism.name}: {professionalism.score:.3f}")
print(professionalism.reason)
