"""ProcessorTable: outcomes to responses, and refusals logged once per cause."""

from __future__ import annotations

from twisted.internet.defer import Deferred
from twisted.logger import capturedLogs, formatEvent
from twisted.trial.unittest import SynchronousTestCase
from zope.interface import implementer

from rocketmq_tx.net.dispatch import HandlerProcessor, IRequestProcessor, ProcessorTable, RefusalLog
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


class HandlerRoutingTests(SynchronousTestCase):
    """register_handlers: a plain HandlerProcessor's handlers are called directly; one with its
    own flow control (reject_request) or dispatch is still asked first."""

    def test_plain_and_busy_processors(self) -> None:
        class Plain(HandlerProcessor):
            def __init__(self) -> None:
                self.handlers = {10: lambda ctx, request: request.make_response(ResponseCode.SUCCESS, "plain")}

        class Busy(HandlerProcessor):
            def __init__(self) -> None:
                self.busy = False
                self.handlers = {11: lambda ctx, request: request.make_response(ResponseCode.SUCCESS, "busy")}

            def reject_request(self) -> bool:
                return self.busy

        table = ProcessorTable()
        busy = Busy()
        table.register_handlers(Plain())
        table.register_handlers(busy)
        self.assertEqual(table.dispatch(Ctx(), RemotingCommand.request(10)).remark, "plain")
        self.assertEqual(table.dispatch(Ctx(), RemotingCommand.request(11)).remark, "busy")
        busy.busy = True
        self.assertEqual(table.dispatch(Ctx(), RemotingCommand.request(11)).code, ResponseCode.SYSTEM_BUSY)
        # a later register() of the code wins over the direct route
        table.register(10, Answers())
        self.assertEqual(table.dispatch(Ctx(), RemotingCommand.request(10, {"answer": "1"})).code, 1)
        # the ACL-style hook still runs before a direct handler
        table = ProcessorTable()
        table.register_handlers(Plain())
        table.before_request = lambda ctx, request: request.make_response(ResponseCode.NO_PERMISSION, "hook")
        self.assertEqual(table.dispatch(Ctx(), RemotingCommand.request(10)).remark, "hook")
