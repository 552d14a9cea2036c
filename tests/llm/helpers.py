"""Constants shared by the LLM tests."""

TEST_KEY = "sk-test-0123456789abcdef"
