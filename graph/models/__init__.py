"""Model adapters: the chat models runs talk to, and asking them for what we can trust.

- ``chat``: which model a role gets (the offline scripted model, or an OpenAI-compatible
  server through ``ServerChatModel``), how a model is named, errors in words.
- ``server``: ``ServerChatModel``, ``ChatOpenAI`` taught what real servers refuse.
- ``modes``: what each server/model pair accepts (structured output, tool calling),
  learnt on first use and remembered.
- ``structured``: ``ask_json``, JSON replies validated against pydantic schemas, with
  one repair round; the tight schemas sent to the server.
- ``tool_prompting``: tool calling through the prompt, for servers without native tools.
- ``probe``: the Model page's *Test connection*.
"""

# The adapter's two prompts are registered when their modules load; load them with the
# package, so a prompt set (and a stored version of either prompt) always knows them.
from graph.models import structured, tool_prompting  # noqa: E402,F401
