package leader

// SetResignedHook sets resignedHook until the returned func restores it.
func SetResignedHook(f func()) (restore func()) {
	resignedHook = f
	return func() { resignedHook = nil }
}
