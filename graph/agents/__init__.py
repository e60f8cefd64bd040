"""Agents a person defines in the browser (user agents): their definition, their tools
and the ReAct worker that runs one, shared by the systems that take them."""
