"""The cross-app integrity check (`manage.py integrity`): every derived view against its source
of truth, with a repair for each (services.py). It imports the apps whose views it checks;
no app imports it."""
