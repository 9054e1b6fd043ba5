"""The job of ``disc21spark freeze``: ``core/frozen.freeze_board`` under the one runner."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from disc21spark.core import frozen
from disc21spark.core.runner import BaseJob, fields_from_options


@dataclass(frozen=True)
class FreezeJob(BaseJob):
    """Copy the board in ``board`` to the new folder ``output``, frozen."""

    board: str
    output: str
    overwrite: bool = False  # never: a frozen copy goes to a new folder
    needs_spark: ClassVar[bool] = False  # local folders, copied in this process

    @classmethod
    def from_options(cls, request: Any) -> FreezeJob:
        return cls(**fields_from_options(cls, request))

    def output_folder(self) -> str | None:
        # freeze_board checks ``output`` itself: it must not exist (the runner's check
        # would take an empty folder), and the copy is renamed into place whole
        return None

    def execute(self, spark: Any) -> Path:
        return frozen.freeze_board(self.board, self.output)

    def summary(self, result: Path) -> list[str]:
        return [f"{self.board} frozen in {result}/ (FROZEN.json): no run replaces it"]
