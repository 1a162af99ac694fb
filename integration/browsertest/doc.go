// Package browsertest opens the status page (statuspage, served by
// dsync's library over the embedded test server of internal/testbed/mongotest)
// in headless Chromium, driven by github.com/chromedp/chromedp, and
// checks what a person sees. It is a module of its own so that neither
// the library nor the command requires chromedp.
//
// Without chromium on PATH no test runs, and go test says so ("ok ...
// [no tests to run]", and why on stderr, shown with -v), unless
// DSYNC_BROWSERTEST_REQUIRED=1 (set by .ci/run, which installs Debian's
// chromium when missing): then the tests fail. The test in the
// directory skiptest checks both.
package browsertest
