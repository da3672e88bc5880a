"""Agent mode (paper 002): the model explores the database through tools."""
