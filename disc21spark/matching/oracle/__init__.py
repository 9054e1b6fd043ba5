"""The exact single-machine numpy specification of each stage, by definition: the tests hold every engine and plan equal to it bit for bit. No production module imports it."""
