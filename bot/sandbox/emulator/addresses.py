"""Where the emulator listens: one host and port for REST, the gateway and the attachment "CDN"."""

from __future__ import annotations

from dataclasses import dataclass

API_PREFIX = "/api/v10"


@dataclass
class Addresses:
    host: str
    #: known once the server listens (0 asks the system for a free port)
    port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def api_base(self) -> str:
        """For `DISCORD_API_BASE` / `discord.http.Route.BASE`."""
        return self.base_url + API_PREFIX

    @property
    def gateway_url(self) -> str:
        """For `DISCORD_GATEWAY_URL` / `DiscordWebSocket.DEFAULT_GATEWAY`."""
        return f"ws://{self.host}:{self.port}/gateway"

    @property
    def resume_gateway_url(self) -> str:
        return f"ws://{self.host}:{self.port}/gateway-resume"

    def attachment_url(self, channel_id: int, attachment_id: int, filename: str) -> str:
        return f"{self.base_url}/attachments/{channel_id}/{attachment_id}/{filename}"
