"""REST: the answers to an interaction — its callback within 3 s, then follow-ups and edits by webhook while
its token lasts (15 minutes)."""

from __future__ import annotations

import secrets

from aiohttp import web

from . import limits
from .addresses import API_PREFIX
from .effects import Effects
from .interactions import ALLOWED_CALLBACKS, AUTOCOMPLETE, InteractionRecord, Interactions
from .options import SandboxOptions
from .rest import JSON, ApiError, Routes, json_response, no_content, unknown_message, unknown_webhook
from .state import SandboxClock, SandboxMessage, World


class InteractionRoutes(Routes):
    def __init__(
        self,
        world: World,
        *,
        effects: Effects,
        interactions: Interactions,
        clock: SandboxClock,
        options: SandboxOptions,
    ) -> None:
        super().__init__(world)
        self.effects = effects
        self.interactions = interactions
        self.clock = clock
        self.options = options

    def register(self, app: web.Application) -> None:
        r = app.router
        p = API_PREFIX
        r.add_post(
            p + "/interactions/{interaction_id}/{interaction_token}/callback", self.interaction_callback
        )
        hook = "/webhooks/{webhook_id}/{webhook_token}"
        r.add_post(p + hook, self.execute_webhook)
        r.add_get(p + hook + "/messages/{message_id}", self.get_webhook_message)
        r.add_patch(p + hook + "/messages/{message_id}", self.edit_webhook_message)
        r.add_delete(p + hook + "/messages/{message_id}", self.delete_webhook_message)

    # -- interactions -------------------------------------------------------------------------------

    async def interaction_callback(self, request: web.Request) -> web.Response:
        record = (
            self.interactions.get(int(request.match_info["interaction_id"]))
            if request.match_info["interaction_id"].isdigit()
            else None
        )
        if record is None or not secrets.compare_digest(
            record.token, request.match_info["interaction_token"]
        ):
            raise ApiError(404, 10062, "Unknown interaction")
        age = self.clock.monotonic() - record.created
        if record.acknowledged:
            raise ApiError(400, 40060, "Interaction has already been acknowledged.")
        if age > self.options.interaction_deadline:
            record.late_callback_age = age
            self.interactions.touch(record)
            raise ApiError(404, 10062, "Unknown interaction")
        body = self.body(request) or {}
        files = self.files(request)
        kind = body.get("type")
        if kind not in ALLOWED_CALLBACKS.get(record.type, set()):
            raise ApiError.invalid_field(
                "type",
                "INTERACTION_CALLBACK_TYPE_INVALID",
                f"Interaction callback type {kind} is not valid for this interaction.",
            )
        data = body.get("data") or {}
        message: SandboxMessage | None = None
        if kind == 4:
            self.effects.validate_message_body(data, files, prefix=("data",))
            message = self.effects.post_interaction_message(record, data, files, origin="response")
        elif kind == 5:
            flags = int(data.get("flags") or 0) & SandboxMessage.EPHEMERAL
            message = self.effects.post_interaction_message(
                record,
                {"content": "", "flags": flags | SandboxMessage.LOADING},
                [],
                origin="response",
                allow_loading=True,
            )
            record.awaiting_first_followup = True
        elif kind in (6, 7):
            source = record.source_message
            if source is None or source.deleted:
                raise ApiError.invalid_field(
                    "type", "INTERACTION_CALLBACK_TYPE_INVALID", "This interaction has no message to update."
                )
            if kind == 7:
                self.effects.validate_message_body(data, files, prefix=("data",), editing=source)
                self.effects.edit_message(source, data, files)
            record.original = source
            message = source if kind == 7 else None
        elif kind == 8:
            errors = limits.validate_choices(data)
            if errors:
                raise ApiError.form(errors)
            record.choices = list(data["choices"])
        elif kind == 9:
            errors = limits.validate_modal(data)
            if errors:
                raise ApiError.form(errors)
            record.modal = dict(data)
        record.callback_type = int(kind)
        record.callback_at = self.clock.monotonic()
        self.interactions.touch(record)
        with_response = request.query.get("with_response", "false").lower() in ("1", "true")
        if not with_response:
            return no_content()
        response: JSON = {
            "interaction": {
                "id": str(record.id),
                "type": record.type,
                "activity_instance_id": None,
                "response_message_id": str(message.id) if message is not None else None,
                "response_message_loading": kind == 5,
                "response_message_ephemeral": bool(message is not None and message.ephemeral),
            }
        }
        if message is not None and kind in (4, 5, 7):
            response["resource"] = {"type": kind, "message": message.payload(me_id=self.world.bot_user.id)}
        return json_response(response)

    def _webhook_record(self, request: web.Request) -> InteractionRecord:
        if request.match_info["webhook_id"] != str(self.world.application.id):
            raise unknown_webhook()
        record = self.interactions.for_token(request.match_info["webhook_token"])
        if record is None:
            raise unknown_webhook()
        if self.clock.monotonic() - record.created > self.options.token_lifetime:
            raise ApiError(401, 50027, "Invalid Webhook Token")
        if not record.acknowledged:
            raise unknown_webhook()
        return record

    def _webhook_message(self, request: web.Request, record: InteractionRecord) -> SandboxMessage:
        wanted = request.match_info["message_id"]
        if wanted == "@original":
            if record.original is None or record.original.deleted or record.callback_type in (8, 9):
                raise unknown_message()
            return record.original
        message = next(
            (m for m in [record.original, *record.followups] if m is not None and str(m.id) == wanted), None
        )
        if message is None or message.deleted:
            raise unknown_message()
        return message

    async def execute_webhook(self, request: web.Request) -> web.Response:
        record = self._webhook_record(request)
        if record.type == AUTOCOMPLETE:
            raise unknown_webhook()
        payload = self.body(request) or {}
        files = self.files(request)
        self.effects.validate_message_body(payload, files)
        if record.awaiting_first_followup and record.original is not None and not record.original.deleted:
            # Discord fills the deferred "thinking" message with the first follow-up.
            message = record.original
            record.awaiting_first_followup = False
            fill = dict(payload)
            fill["flags"] = message.flags & SandboxMessage.EPHEMERAL
            self.effects.edit_message(message, fill, files, clear_loading=True)
        else:
            message = self.effects.post_interaction_message(record, payload, files, origin="followup")
        self.interactions.touch(record)
        if request.query.get("wait", "false").lower() in ("1", "true"):
            return self.message_out(message)
        return no_content()

    async def get_webhook_message(self, request: web.Request) -> web.Response:
        record = self._webhook_record(request)
        return self.message_out(self._webhook_message(request, record))

    async def edit_webhook_message(self, request: web.Request) -> web.Response:
        record = self._webhook_record(request)
        message = self._webhook_message(request, record)
        payload = self.body(request) or {}
        files = self.files(request)
        self.effects.validate_message_body(payload, files, editing=message)
        if message.loading:
            record.awaiting_first_followup = False
        self.effects.edit_message(message, payload, files, clear_loading=True)
        self.interactions.touch(record)
        return self.message_out(message)

    async def delete_webhook_message(self, request: web.Request) -> web.Response:
        record = self._webhook_record(request)
        message = self._webhook_message(request, record)
        self.effects.delete_message(message)
        self.interactions.touch(record)
        return no_content()
