"""PlatformIO's custom test runner for this project (test_framework = custom): the test
programs print "PASS <name>" or "FAIL <name>: <why>" per case and "END" when done, on the host
board's stdout or a board's serial port."""

from platformio.public import TestCase, TestRunnerBase, TestStatus


class CustomTestRunner(TestRunnerBase):
    def on_testing_line_output(self, line):
        print(line, end="")
        text = line.strip()
        if text.startswith(("PASS ", "FAIL ")):
            status, _, rest = text.partition(" ")
            name, _, why = rest.partition(": ")
            self.test_suite.add_case(
                TestCase(
                    name=name,
                    status=TestStatus.PASSED if status == "PASS" else TestStatus.FAILED,
                    message=why or None,
                )
            )
        elif text == "END":
            self.test_suite.on_finish()
