async def handler(ctx):
    return {"greeting": f"hello {ctx.request.body.get('name', '')}"}
