"""ProcessorTable: outcomes to responses, and refusals logged once per cause."""

from __future__ import annotations

from twisted.internet.defer import Deferred
from twisted.logger import capturedLogs, formatEvent
from twisted.trial.unittest import SynchronousTestCase
from zope.interface import implementer

from rocketmq_tx.net.dispatch import IRequestProcessor, ProcessorTable, RefusalLog
from rocketmq_tx.remoting import RemotingCommand, ResponseCode


class Ctx:
    peer = "10.0.0.9:4321"


@implementer(IRequestProcessor)
class Answers:
    """Answers each request with the code and remark its ext fields name."""

    def reject_request(self) -> bool:
        return False

    def process_request(self, ctx: object, request: RemotingCommand) -> object:
        response = request.make_response(int(request.ext_fields["answer"]), request.ext_fields.get("remark"))
        if request.ext_fields.get("later"):
            d: Deferred = Deferred()
            d.callback(response)
            return d
        return response


def refusals(events: list[dict]) -> list[str]:
    return [formatEvent(e) for e in events if e.get("log_format", "").startswith("refused request")]


class RefusalLogTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.table = ProcessorTable({10: Answers()})

    def call(self, code: int = 10, **ext: str) -> object:
        return self.table.dispatch(Ctx(), RemotingCommand.request(code, ext))

    def test_once_per_cause(self) -> None:
        with capturedLogs() as events:
            for _ in range(3):
                self.call(answer="16", remark="no permission on T")
                self.call(answer="16", remark="no permission on T", later="1")
            self.call(answer="16", remark="no permission on U")
            self.call(99)  # unsupported code
            self.call(99)
            self.call(answer="0")  # success: never logged
            self.call(answer="19")  # PULL_NOT_FOUND is no refusal
        self.assertEqual(refusals(events), [
            "refused request code 10 from 10.0.0.9:4321: response code 16, no permission on T",
            "refused request code 10 from 10.0.0.9:4321: response code 16, no permission on U",
            "refused request code 99 from 10.0.0.9:4321: response code 3,  request type 99 not supported",
        ])

    def test_expression_refusals(self) -> None:
        """A subscription expression that does not parse, at subscribe or at the pull."""
        with capturedLogs() as events:
            for _ in range(2):
                self.call(answer="23", remark="bad sql")  # SUBSCRIPTION_PARSE_FAILED
                self.call(answer="27", remark="no filter data")  # FILTER_DATA_NOT_EXIST
        self.assertEqual(refusals(events), [
            "refused request code 10 from 10.0.0.9:4321: response code 23, bad sql",
            "refused request code 10 from 10.0.0.9:4321: response code 27, no filter data",
        ])

    def test_one_line_per_refusal(self) -> None:
        """A remark echoing a peer's newline cannot forge a second log line."""
        with capturedLogs() as events:
            self.call(answer="1", remark="bad group a\nrefused request code 10 from 1.2.3.4:5: forged")
        (line,) = refusals(events)
        self.assertNotIn("\n", line)
        self.assertIn("bad group a\\nrefused", line)

    def test_causes_are_bounded(self) -> None:
        """A peer inventing a new remark per request (a new bad name each) cannot grow memory."""
        log = RefusalLog(max_causes=4)
        request = RemotingCommand.request(10)
        with capturedLogs() as events:
            for i in range(10):
                log.note("p", request, request.make_response(ResponseCode.SYSTEM_ERROR, f"bad name {i}" * 100))
        self.assertEqual(len(log._seen), 4)
        self.assertEqual(len(refusals(events)), 10)
        self.assertTrue(all(len(line) < 300 for line in refusals(events)))


class OnDeferredTests(SynchronousTestCase):
    def test_told_of_answers_that_come_later(self) -> None:
        """``on_deferred`` hears of each request answered by a Deferred, with that Deferred; not of the others."""
        table = ProcessorTable({10: Answers()})
        told: list[tuple[int, Deferred]] = []
        table.on_deferred = lambda request, d: told.append((request.code, d))
        now = table.dispatch(Ctx(), RemotingCommand.request(10, {"answer": "0"}))
        later = table.dispatch(Ctx(), RemotingCommand.request(10, {"answer": "0", "later": "1"}))
        self.assertIsInstance(now, RemotingCommand)
        self.assertEqual(told, [(10, later)])
