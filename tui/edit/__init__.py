"""Edit by instruction: the region an edit rewrites, the instruction box, the streamed rewrite
shown as an inline diff, and its review (accept or reject, all or hunk by hunk). The engine side
(the prompt, drafting from the original) is `EditRequest` in specterm.engine."""
