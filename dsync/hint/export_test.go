package hint

// WaitUntil is waitUntil, for the tests of package hint_test.
var WaitUntil = waitUntil
