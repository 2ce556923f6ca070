package runner

// WithToolReadWriteForTests lets every stdio MCP server of runners built
// from c also write dirs (outside any trial): the fixtures' pid files.
func WithToolReadWriteForTests(c *Config, dirs ...string) {
	c.testToolReadWrite = append(c.testToolReadWrite, dirs...)
}
