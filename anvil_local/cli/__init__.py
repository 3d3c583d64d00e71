"""`anvil`, the command line: parse, call the library, render.

`root` holds the group and its error boundary, `options` every option more than one command
takes, and each other module one command group. Heavy imports wait inside the commands, so
`anvil --help` stays quick."""

from anvil_local.cli import (
    bench,
    doctor,
    evaluate,
    fit,
    metric_files,
    models,
    perturb,
    serve,
    train,
)
from anvil_local.cli.bundle import bundle
from anvil_local.cli.compare import compare_command
from anvil_local.cli.root import (
    EXIT_BAD_INPUT,
    EXIT_CRASHED,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    main,
)
from anvil_local.cli.view import view_command

main.add_command(models.models)
main.add_command(doctor.doctor)
main.add_command(bundle)
main.add_command(bench.bench)
main.add_command(fit.fit)
main.add_command(perturb.perturb)
main.add_command(train.train)
main.add_command(metric_files.validate)
main.add_command(metric_files.export)
main.add_command(metric_files.steps)
main.add_command(metric_files.explain)
main.add_command(evaluate.eval_command)
main.add_command(evaluate.merge)
main.add_command(compare_command)
main.add_command(view_command)
main.add_command(serve.serve)

__all__ = ["EXIT_BAD_INPUT", "EXIT_CRASHED", "EXIT_FAILED", "EXIT_INTERRUPTED", "main"]
